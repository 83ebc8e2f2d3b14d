package provider_test

import (
	"context"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// The two tests below serve one custom-metrics request each, the metric already
// discovered (Hit) or found by on-demand discovery (Miss), in the subtest "served"
// after the subtest "built". They are the measure of the request path in
// docs/benchmarks.md: run each with -coverpkg=./adapter/..., once whole and once
// with -run 'TestRequestPathX$/^built$'; the blocks whose count grew are the
// request's.

func requestPathProvider(t *testing.T, relist bool) (*provider.Provider, *fake.Client) {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set := rulestest.Parse(t, rulestest.PodsAndQueue)
	series := []fake.Series{{Name: "http_requests_total", Labels: map[string]string{"namespace": "shop", "pod": "web-1"}}}
	pc := &fake.Client{
		SeriesByMatch: map[string][]fake.Series{
			`{__name__="http_requests_total",namespace!="",pod!=""}`: series,
			// on-demand discovery narrows the rule's selector to the series name
			`{__name__="http_requests_total",__name__="http_requests_total",namespace!="",pod!=""}`: series,
		},
		Answers: map[string]model.Vector{
			`sum(rate(http_requests_total{namespace="shop",pod="web-1"}[2m])) by (pod)`: {{Metric: model.Metric{"pod": "web-1"}, Value: 2.5, Timestamp: 1700000000000}},
		},
	}
	d, err := discovery.New(discovery.Options{Client: pc, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	if relist {
		if err := d.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	p, err := provider.New(provider.Options{Prom: pc, Discovery: d, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return p, pc
}

func serveOne(t *testing.T, p *provider.Provider) {
	t.Helper()
	v, err := p.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "shop", Name: "web-1"}, requestsPS, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if v.Value.MilliValue() != 2500 || v.DescribedObject.Name != "web-1" {
		t.Errorf("value = %+v, want 2.5 for web-1", v)
	}
}

func TestRequestPathHit(t *testing.T) {
	p, _ := requestPathProvider(t, true)
	t.Run("built", func(t *testing.T) {
		if !slices.Contains(p.ListAllMetrics(), requestsPS) {
			t.Fatalf("%v before the request, want %v among them (a hit)", p.ListAllMetrics(), requestsPS)
		}
	})
	t.Run("served", func(t *testing.T) { serveOne(t, p) })
}

func TestRequestPathMiss(t *testing.T) {
	p, pc := requestPathProvider(t, false)
	t.Run("built", func(t *testing.T) {
		if n := len(p.ListAllMetrics()); n != 0 {
			t.Fatalf("%d metrics before the request, want none (a miss)", n)
		}
	})
	t.Run("served", func(t *testing.T) {
		serveOne(t, p)
		if n := len(pc.Queries()); n != 1 {
			t.Errorf("%d queries, want 1", n)
		}
	})
}
