package provider

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// withField adds field after each rule's metricsQuery line of r.
func withField(r, field string) string {
	var out []string
	for _, line := range strings.Split(r, "\n") {
		out = append(out, line)
		if strings.HasPrefix(strings.TrimSpace(line), "metricsQuery:") && field != "" {
			out[len(out)-1] = line + field
		}
	}
	return strings.Join(out, "\n")
}

func newNaNFixture(t *testing.T, globalNaN, ruleNaN string) *fixture {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse([]byte(withField(string(rulestest.Data(t, rulestest.PodsAndQueue)), nanField(ruleNaN))), mapper)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{
		prom: &promfake.Client{SeriesByMatch: map[string][]promfake.Series{
			`{__name__="http_requests_total",namespace!="",pod!=""}`: {{Name: "http_requests_total", Labels: map[string]string{"namespace": "ns", "pod": "p"}}},
			`{__name__="queue_messages_ready",namespace!=""}`:        {{Name: "queue_messages_ready", Labels: map[string]string{"namespace": "ns", "queue": "q"}}},
		}},
		lister: &objfake.Lister{},
	}
	d, err := discovery.New(discovery.Options{Client: f.prom, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.reg = prometheus.NewRegistry()
	f.provider, err = New(Options{Prom: f.prom, Discovery: d, Lister: f.lister, Mapper: mapper, Registerer: f.reg, NaNValues: globalNaN})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func nanField(v string) string {
	if v == "" {
		return ""
	}
	return "\n  nanValues: " + v
}

// TestNaNValues: a NaN sample is served as 0 by default (prometheus-adapter's
// behaviour) and left out with --nan-values=drop or a rule's nanValues: drop;
// the rule's setting wins over the flag. Left out, a single object's metric
// is 404 and a list or external answer has no item for it.
func TestNaNValues(t *testing.T) {
	tests := []struct {
		global, rule string
		drop         bool
	}{
		{"", "", false},
		{rulefile.NaNZero, "", false},
		{rulefile.NaNDrop, "", true},
		{rulefile.NaNZero, rulefile.NaNDrop, true},
		{rulefile.NaNDrop, rulefile.NaNZero, false},
		{"", rulefile.NaNDrop, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("flag=%q/rule=%q", tc.global, tc.rule), func(t *testing.T) {
			f := newNaNFixture(t, tc.global, tc.rule)
			ctx := context.Background()
			byName := `sum(rate(http_requests_total{namespace="ns",pod="p"}[2m])) by (pod)`
			bySel := `sum(rate(http_requests_total{namespace="ns",pod=~"a|p"}[2m])) by (pod)`
			ext := `sum(queue_messages_ready{queue="orders",namespace="ns"}) by (queue)`
			f.prom.Answers = map[string]model.Vector{
				byName: {sample(model.Metric{"pod": "p"}, math.NaN(), 1000)},
				bySel:  {sample(model.Metric{"pod": "a"}, 2, 1000), sample(model.Metric{"pod": "p"}, math.NaN(), 1000)},
				ext:    {sample(model.Metric{"queue": "orders"}, math.NaN(), 1000)},
			}
			for _, n := range []string{"a", "p"} {
				f.lister.Objects = append(f.lister.Objects, objfake.Object{Resource: pods, Namespace: "ns", Name: n})
			}

			v, err := f.provider.GetMetricByName(ctx, types.NamespacedName{Namespace: "ns", Name: "p"}, info("http_requests_per_second"), labels.Everything())
			switch {
			case tc.drop && !apierrors.IsNotFound(err):
				t.Errorf("by name: value %v err %v, want 404", v, err)
			case !tc.drop && (err != nil || v.Value.MilliValue() != 0):
				t.Errorf("by name: value %v err %v, want 0", v, err)
			}

			list, err := f.provider.GetMetricBySelector(ctx, "ns", labels.Everything(), info("http_requests_per_second"), labels.Everything())
			if err != nil {
				t.Fatalf("by selector: %v (queries %q)", err, f.prom.Queries())
			}
			var got []string
			for _, it := range list.Items {
				got = append(got, fmt.Sprintf("%s=%dm", it.DescribedObject.Name, it.Value.MilliValue()))
			}
			want := "a=2000m p=0m"
			if tc.drop {
				want = "a=2000m"
			}
			if strings.Join(got, " ") != want {
				t.Errorf("by selector: %v, want %s", got, want)
			}

			el, err := f.provider.GetExternalMetric(ctx, "ns", labels.SelectorFromSet(labels.Set{"queue": "orders"}), provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
			if err != nil {
				t.Fatalf("external: %v", err)
			}
			if n := len(el.Items); (tc.drop && n != 0) || (!tc.drop && (n != 1 || el.Items[0].Value.MilliValue() != 0)) {
				t.Errorf("external: items %+v, drop %v", el.Items, tc.drop)
			}
		})
	}
}

func TestNaNValuesInvalid(t *testing.T) {
	if _, err := New(Options{Prom: &promfake.Client{}, Discovery: &discovery.Discoverer{}, Lister: &objfake.Lister{},
		Mapper: rulefile.DefaultRESTMapper(), Registerer: prometheus.NewRegistry(), NaNValues: "nan"}); err == nil || !strings.Contains(err.Error(), `"nan"`) {
		t.Errorf("NaNValues \"nan\": err %v, want an error naming it", err)
	}
	_, err := rules.Parse([]byte(withField(string(rulestest.Data(t, rulestest.PodsAndQueue)), nanField("Drop"))), rulefile.DefaultRESTMapper())
	if err == nil || !strings.Contains(err.Error(), "nanValues") {
		t.Errorf("rule nanValues Drop: err %v, want an error naming nanValues", err)
	}
}
