package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const testRules = `
rules:
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
      service: {resource: service}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^node_.*"}'
  resources:
    template: <<.Resource>>
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: '{__name__=~"^http_.*_total$",namespace!="",pod!=""}'
  seriesFilters: [{is: "^http_errors"}]
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^http_errors_total$", as: "http_requests_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[5m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

func compileRules(t testing.TB, text string) []*rules.Rule {
	t.Helper()
	set, err := rules.Parse([]byte(text), rulefile.DefaultRESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	return set.Rules
}

func testSeries() map[string][]fake.Series {
	return map[string][]fake.Series{
		`{__name__=~"^http_.*_total$",namespace!="",pod!=""}`: {
			{Name: "http_requests_total", Labels: map[string]string{"namespace": "a", "pod": "p1", "service": "s"}},
			{Name: "http_requests_total", Labels: map[string]string{"namespace": "a", "pod": "p2", "service": "s"}},
			{Name: "http_errors_total", Labels: map[string]string{"namespace": "a", "pod": "p1"}},
		},
		`{__name__=~"^node_.*"}`: {
			{Name: "node_load1", Labels: map[string]string{"node": "n1"}},
			{Name: "node_load1", Labels: map[string]string{"node": "n2", "instance": "x"}},
		},
		`queue_messages_ready`: {
			{Name: "queue_messages_ready", Labels: map[string]string{"queue": "orders"}},
		},
	}
}

func newTestDiscoverer(t *testing.T, client *fake.Client, clk *clocktesting.FakeClock) *Discoverer {
	t.Helper()
	d, err := New(Options{
		Client: client, Scope: MapperScope{Mapper: rulefile.DefaultRESTMapper()}, MaxAge: time.Hour,
		Clock: clk, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(compileRules(t, testRules))
	return d
}

func TestRelistEntries(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	d := newTestDiscoverer(t, client, clocktesting.NewFakeClock(time.Now()))
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, info := range d.Registry().CustomMetrics() {
		got = append(got, info.String())
	}
	want := []string{
		"namespaces/http_errors_per_second",
		"namespaces/http_requests_per_second",
		"nodes/node_load1",
		"pods/http_errors_per_second(namespaced)",
		"pods/http_requests_per_second(namespaced)",
		"services/http_requests_per_second(namespaced)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("custom metrics:\n got %v\nwant %v", got, want)
	}
	if ext := d.Registry().ExternalMetrics(); len(ext) != 1 || ext[0].Metric != "queue_messages_ready" {
		t.Errorf("external metrics = %v", ext)
	}
	// Two rules produce pods/http_requests_per_second: the later one wins.
	tgt, ok := d.Registry().Custom(provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: "http_requests_per_second"})
	if !ok || tgt.Rule.Index() != 2 || tgt.Series != "http_errors_total" {
		t.Errorf("pods target = %+v (rule %d), want the later rule", tgt, tgt.Rule.Index())
	}
	// Identical series queries share one discovery call.
	if calls := client.SeriesCalls(); len(calls) != 3 {
		t.Errorf("series calls = %v, want 3 (one per distinct query)", calls)
	}
	if !d.Synced() {
		t.Error("not synced after a successful relist")
	}
}

func TestRelistFailureKeepsLastGood(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	d := newTestDiscoverer(t, client, clocktesting.NewFakeClock(time.Now()))
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := d.Registry()
	client.Err = errors.New("prometheus down")
	if err := d.Relist(context.Background()); err == nil {
		t.Fatal("want error")
	}
	if d.Registry() != before {
		t.Error("registry replaced after a failed relist")
	}
}

func TestOnDemandDiscovery(t *testing.T) {
	series := testSeries()
	client := &fake.Client{SeriesByMatch: series}
	clk := clocktesting.NewFakeClock(time.Now())
	d := newTestDiscoverer(t, client, clk)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := `{__name__=~"^http_.*_total$",namespace!="",pod!=""}`
	series[q] = append(series[q], fake.Series{Name: "http_logins_total", Labels: map[string]string{"namespace": "a", "pod": "p1"}})
	// The narrowed selector the on-demand path sends for the new series name.
	series[`{__name__="http_logins_total",__name__=~"^http_.*_total$",namespace!="",pod!=""}`] = []fake.Series{
		{Name: "http_logins_total", Labels: map[string]string{"namespace": "a", "pod": "p1"}},
	}
	info := provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: "http_logins_per_second"}
	if !d.discoverCustom(context.Background(), info) {
		t.Fatal("new metric not found on demand")
	}
	if _, ok := d.Registry().Custom(info); !ok {
		t.Fatal("registry does not serve the metric found on demand")
	}
	// A second unknown name right away is allowed (different name), the same
	// unknown name again is rate limited until the interval passes.
	missing := provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: "nope"}
	calls := len(client.SeriesCalls())
	d.discoverCustom(context.Background(), missing)
	afterFirst := len(client.SeriesCalls())
	if afterFirst == calls {
		t.Error("first on-demand attempt for a name sent nothing")
	}
	d.discoverCustom(context.Background(), missing)
	if n := len(client.SeriesCalls()); n != afterFirst {
		t.Errorf("repeated attempt within the interval sent %d requests", n-afterFirst)
	}
	clk.Step(11 * time.Second)
	d.discoverCustom(context.Background(), missing)
	if n := len(client.SeriesCalls()); n == afterFirst {
		t.Error("attempt after the interval was not sent")
	}
}

func TestOnDemandGlobalRateLimit(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	d := newTestDiscoverer(t, client, clocktesting.NewFakeClock(time.Now()))
	sent := 0
	for i := range 100 {
		before := len(client.SeriesCalls())
		d.discoverExternal(context.Background(), fmt.Sprintf("random_%d", i))
		if len(client.SeriesCalls()) > before {
			sent++
		}
	}
	if sent > 10 {
		t.Errorf("%d of 100 distinct unknown names reached Prometheus at once; the burst is 10", sent)
	}
}

func TestNarrowSelector(t *testing.T) {
	tests := []struct {
		sel, name, want string
		ok              bool
	}{
		{`{__name__=~"^http_.*"}`, "http_x", `{__name__="http_x",__name__=~"^http_.*"}`, true},
		{`{}`, "m", `{__name__="m"}`, true},
		{` { a="b" }`, "m", `{__name__="m",a="b" }`, true},
		{`queue_messages_ready`, "queue_messages_ready", `queue_messages_ready`, true},
		{`queue_messages_ready{queue!=""}`, "queue_messages_ready", `queue_messages_ready{queue!=""}`, true},
		{`queue_messages_ready{queue!=""}`, "other", "", false},
		{`{__name__=~".+"}`, `we"ird`, `{__name__="we\"ird",__name__=~".+"}`, true},
	}
	for _, tt := range tests {
		got, ok := narrowSelector(tt.sel, tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("narrowSelector(%q, %q) = %q, %v; want %q, %v", tt.sel, tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCollectorInternsLabelSets(t *testing.T) {
	rules := compileRules(t, testRules)
	col := newCollector(rules)
	for i := range 1000 {
		col.add([]int{0, 2}, "http_requests_total", []string{"namespace", "pod", "service"})
		col.add([]int{0, 2}, fmt.Sprintf("http_x%d_total", i%3), []string{"namespace", "pod"})
	}
	if len(col.sets) != 2 {
		t.Errorf("%d label sets stored, want 2", len(col.sets))
	}
	names := sets.New[string]()
	for n := range col.seen[0] {
		names.Insert(n)
	}
	if names.Len() != 4 || !strings.HasPrefix(sets.List(names)[0], "http_") {
		t.Errorf("series names kept: %v", sets.List(names))
	}
}
