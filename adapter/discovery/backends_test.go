package discovery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// backendRules: the same seriesQuery on the default backend and on "team", and an
// external rule on "team" only.
const backendRules = `
rules:
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  backend: team
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "team_${1}"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready'
  backend: team
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

func backendSeries(name string) map[string][]fake.Series {
	return map[string][]fake.Series{
		`{__name__=~"^http_.*_total$",namespace!="",pod!=""}`: {
			{Name: name, Labels: map[string]string{"namespace": "a", "pod": "p1"}},
		},
		`queue_messages_ready`: {{Name: "queue_messages_ready", Labels: map[string]string{"queue": "q"}}},
	}
}

func newBackendDiscoverer(t *testing.T, def, team *fake.Client) (*Discoverer, *prometheus.Registry) {
	t.Helper()
	set, err := rules.ParseWith([]byte(backendRules), rules.Options{Backends: []string{"team"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	d, err := New(Options{
		Client: def, Backends: prom.Backends{"team": team}, Scope: MapperScope{Mapper: rulefile.DefaultRESTMapper()},
		MaxAge: time.Hour, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	return d, reg
}

func podMetric(name string) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: name}
}

// TestRelistPerBackend: each rule's series are listed in its own backend (the same
// seriesQuery is sent once to each), and a backend that fails keeps its last good
// metrics while the other's are refreshed.
func TestRelistPerBackend(t *testing.T) {
	def := &fake.Client{SeriesByMatch: backendSeries("http_requests_total")}
	team := &fake.Client{SeriesByMatch: backendSeries("http_orders_total")}
	d, reg := newBackendDiscoverer(t, def, team)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := d.Registry()
	for _, want := range []string{"http_requests_per_second", "team_http_orders"} {
		if _, ok := r.Custom(podMetric(want)); !ok {
			t.Errorf("%s not discovered; have %v", want, r.CustomMetrics())
		}
	}
	for _, unwanted := range []string{"team_http_requests", "http_orders_per_second"} {
		if _, ok := r.Custom(podMetric(unwanted)); ok {
			t.Errorf("%s discovered from the other backend's series", unwanted)
		}
	}
	if tg, ok := r.External("queue_messages_ready"); !ok || tg.Rule.Backend() != "team" {
		t.Errorf("external metric: %v %v, want the team rule", tg, ok)
	}
	if n := len(def.SeriesCalls()); n != 1 {
		t.Errorf("default backend got %d series calls, want 1 (its one query)", n)
	}
	if n := len(team.SeriesCalls()); n != 2 {
		t.Errorf("team backend got %d series calls, want 2", n)
	}

	// The team backend goes down and the default backend's series change.
	team.SetErr(errors.New("connection refused"))
	def.SeriesByMatch = backendSeries("http_sessions_total")
	err := d.Relist(context.Background())
	if err == nil || !strings.Contains(err.Error(), `backend "team"`) || strings.Contains(err.Error(), `backend "default"`) {
		t.Fatalf("Relist = %v, want an error naming the team backend only", err)
	}
	r = d.Registry()
	if _, ok := r.Custom(podMetric("http_sessions_per_second")); !ok {
		t.Errorf("default backend not refreshed while team is down: %v", r.CustomMetrics())
	}
	if _, ok := r.Custom(podMetric("http_requests_per_second")); ok {
		t.Error("default backend's removed series still served")
	}
	if _, ok := r.Custom(podMetric("team_http_orders")); !ok {
		t.Error("team backend's last good metric dropped while it is down")
	}
	if _, ok := r.External("queue_messages_ready"); !ok {
		t.Error("team backend's last good external metric dropped while it is down")
	}
	if n := testutil.CollectAndCount(reg, "ebbflow_adapter_discovery_last_success_timestamp_seconds"); n != 2 {
		t.Errorf("%d last_success series, want one per backend", n)
	}

	// Every backend down: the registry is unchanged.
	def.SetErr(errors.New("down"))
	before := d.Registry()
	if err := d.Relist(context.Background()); err == nil {
		t.Fatal("Relist with every backend down succeeded")
	}
	if d.Registry() != before {
		t.Error("registry replaced although every backend failed")
	}
}

// TestOnDemandPerBackend: on-demand discovery asks only the backend of the rules
// that could name the metric.
func TestOnDemandPerBackend(t *testing.T) {
	def := &fake.Client{SeriesByMatch: backendSeries("http_requests_total")}
	team := &fake.Client{SeriesByMatch: backendSeries("http_orders_total")}
	narrowed := `{__name__="http_orders_total",__name__=~"^http_.*_total$",namespace!="",pod!=""}`
	team.SeriesByMatch[narrowed] = team.SeriesByMatch[`{__name__=~"^http_.*_total$",namespace!="",pod!=""}`]
	d, _ := newBackendDiscoverer(t, def, team)
	if !d.discoverCustom(context.Background(), podMetric("team_http_orders")) {
		t.Fatal("team_http_orders not discovered on demand")
	}
	if n := len(def.SeriesCalls()); n != 0 {
		t.Errorf("default backend asked %d times for a metric only the team rule names", n)
	}
}

// TestMergeByRule: across backends the later rule wins, as within one.
func TestMergeByRule(t *testing.T) {
	rules := compileRulesWith(t, backendRules, []string{"team"})
	info := podMetric("x")
	a := &Registry{custom: map[provider.CustomMetricInfo]Target{info: {Rule: rules[1], Series: "b"}}, external: map[string]Target{}}
	b := &Registry{custom: map[provider.CustomMetricInfo]Target{info: {Rule: rules[0], Series: "a"}}, external: map[string]Target{}}
	for _, order := range [][]*Registry{{a, b}, {b, a}} {
		if got, _ := mergeByRule(order).Custom(info); got.Rule != rules[1] {
			t.Errorf("merged target from rule %d, want rule 1", got.Rule.Index())
		}
	}
}

func compileRulesWith(t *testing.T, text string, backends []string) []*rules.Rule {
	t.Helper()
	set, err := rules.ParseWith([]byte(text), rules.Options{Backends: backends})
	if err != nil {
		t.Fatal(err)
	}
	return set.Rules
}
