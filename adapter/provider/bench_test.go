package provider_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

const (
	benchNS   = "shop"
	benchPods = 1000
)

var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	requestsPS = cmprovider.CustomMetricInfo{GroupResource: podsGR, Namespaced: true, Metric: "http_requests_per_second"}
	webPods    = labels.SelectorFromSet(labels.Set{"app": "web"})
)

// benchPod is the name of pod i of a Deployment-style ReplicaSet (20 characters).
func benchPod(i int) string {
	return fmt.Sprintf("web-7c9d8f6b5d-%05x", i*7919%(1<<20))
}

type benchFixture struct {
	prom     *fake.Client
	provider *provider.Provider
}

// newBenchFixture builds a Provider over the real discovery registry, a fake lister
// holding benchPods pods of benchNS labelled app=web, and a fake Prometheus that
// answers at once: one sample per pod for a query over many pods, the pod's sample
// for a query naming one pod (pod="…"), one sample for the external metric.
func newBenchFixture(b *testing.B, threshold int) *benchFixture {
	b.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse(rulestest.Data(b, rulestest.PodsAndQueue), mapper)
	if err != nil {
		b.Fatal(err)
	}
	lister := &objfake.Lister{}
	podAnswer := make(model.Vector, 0, benchPods)
	byPod := make(map[string]*model.Sample, benchPods)
	ts := model.TimeFromUnixNano(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	for i := range benchPods {
		name := benchPod(i)
		lister.Objects = append(lister.Objects, objfake.Object{Resource: podsGR, Namespace: benchNS, Name: name, Labels: map[string]string{"app": "web"}})
		s := &model.Sample{Metric: model.Metric{"pod": model.LabelValue(name)}, Value: model.SampleValue(i) / 7, Timestamp: ts}
		podAnswer = append(podAnswer, s)
		byPod[name] = s
	}
	queueAnswer := model.Vector{{Metric: model.Metric{"queue": "orders"}, Value: 1234, Timestamp: ts}}
	pc := &fake.Client{
		SeriesByMatch: map[string][]fake.Series{
			`{__name__="http_requests_total",namespace!="",pod!=""}`: {{Name: "http_requests_total", Labels: map[string]string{"namespace": benchNS, "pod": benchPod(0)}}},
			`{__name__="queue_messages_ready",namespace!=""}`:        {{Name: "queue_messages_ready", Labels: map[string]string{"namespace": benchNS, "queue": "orders"}}},
		},
		QueryFunc: func(q string) (model.Vector, error) {
			if strings.Contains(q, "queue_messages_ready") {
				return queueAnswer, nil
			}
			if _, rest, ok := strings.Cut(q, `pod="`); ok { // one pod: its sample only
				name, _, _ := strings.Cut(rest, `"`)
				return model.Vector{byPod[name]}, nil
			}
			return podAnswer, nil
		},
	}
	d, err := discovery.New(discovery.Options{Client: pc, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	d.SetRules(set.Rules)
	if err := d.Relist(context.Background()); err != nil {
		b.Fatal(err)
	}
	p, err := provider.New(provider.Options{
		Prom: pc, Discovery: d, Lister: lister, Mapper: mapper,
		NamespaceQueryThreshold: threshold, Registerer: prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return &benchFixture{prom: pc, provider: p}
}

// run measures op: ns/op and allocations as usual, plus p50-ns and p99-ns over the
// individual ops and promql-bytes, the length of the PromQL of the first op.
func (f *benchFixture) run(b *testing.B, op func(ctx context.Context) error) {
	ctx := context.Background()
	if err := op(ctx); err != nil { // warm-up; also records the query sent
		b.Fatal(err)
	}
	q := f.prom.Queries()
	if len(q) == 0 {
		b.Fatal("no query sent")
	}
	promql := q[len(q)-1]
	var durations []time.Duration
	for b.Loop() {
		start := time.Now()
		err := op(ctx)
		durations = append(durations, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(durations)
	b.ReportMetric(float64(percentile(durations, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(durations, 99)), "p99-ns")
	b.ReportMetric(float64(len(promql)), "promql-bytes")
}

// percentile returns the p-th percentile (nearest rank) of sorted d.
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := (len(d)*p + 99) / 100
	return d[max(i-1, 0)]
}

// BenchmarkGetMetricBySelector is the request of an HPA scaling a 1,000-replica
// Deployment on a pods metric: names from the lister, one PromQL query, 1,000 items.
// query=namespace is the default threshold (one namespace-wide query filtered to the
// names); query=regex disables it (-1), sending a regex of all 1,000 names as
// prometheus-adapter does. Prometheus time is excluded (the fake answers at once).
func BenchmarkGetMetricBySelector(b *testing.B) {
	for _, tc := range []struct {
		name      string
		threshold int
		want      string // marker of the expected query shape
	}{
		{"query=namespace", 0, `pod!=""`},
		{"query=regex", -1, `pod=~"`},
	} {
		b.Run(fmt.Sprintf("pods=%d/%s", benchPods, tc.name), func(b *testing.B) {
			f := newBenchFixture(b, tc.threshold)
			f.run(b, func(ctx context.Context) error {
				list, err := f.provider.GetMetricBySelector(ctx, benchNS, webPods, requestsPS, labels.Everything())
				if err == nil && len(list.Items) != benchPods {
					err = fmt.Errorf("got %d items, want %d", len(list.Items), benchPods)
				}
				return err
			})
			if q := f.prom.Queries(); !strings.Contains(q[0], tc.want) {
				b.Fatalf("query %.200q does not have the expected shape %q", q[0], tc.want)
			}
		})
	}
}

// BenchmarkGetMetricByName is one pod's value, as for an Object or single-pod request.
func BenchmarkGetMetricByName(b *testing.B) {
	f := newBenchFixture(b, 0)
	name := types.NamespacedName{Namespace: benchNS, Name: benchPod(42)}
	f.run(b, func(ctx context.Context) error {
		_, err := f.provider.GetMetricByName(ctx, name, requestsPS, labels.Everything())
		return err
	})
}

// BenchmarkGetMetricByNameSelector is BenchmarkGetMetricByName with a metric
// selector, which the query renders and the answer names.
func BenchmarkGetMetricByNameSelector(b *testing.B) {
	f := newBenchFixture(b, 0)
	name := types.NamespacedName{Namespace: benchNS, Name: benchPod(42)}
	sel := labels.SelectorFromSet(labels.Set{"code": "200", "method": "GET"})
	f.run(b, func(ctx context.Context) error {
		v, err := f.provider.GetMetricByName(ctx, name, requestsPS, sel)
		if err == nil && (v.Metric.Selector == nil || len(v.Metric.Selector.MatchLabels) != 2) {
			err = fmt.Errorf("answer names selector %v, want code and method", v.Metric.Selector)
		}
		return err
	})
}

// BenchmarkGetExternalMetric is one external metric with a label selector.
func BenchmarkGetExternalMetric(b *testing.B) {
	f := newBenchFixture(b, 0)
	sel := labels.SelectorFromSet(labels.Set{"queue": "orders"})
	info := cmprovider.ExternalMetricInfo{Metric: "queue_messages_ready"}
	f.run(b, func(ctx context.Context) error {
		list, err := f.provider.GetExternalMetric(ctx, benchNS, sel, info)
		if err == nil && len(list.Items) != 1 {
			err = fmt.Errorf("got %d items, want 1", len(list.Items))
		}
		return err
	})
}

// BenchmarkFakeListerNames is the share of GetMetricBySelector spent in the fake
// lister (a linear scan and sort, unlike the informer cache's namespace index), to be
// subtracted when reading the figures above.
func BenchmarkFakeListerNames(b *testing.B) {
	lister := &objfake.Lister{}
	for i := range benchPods {
		lister.Objects = append(lister.Objects, objfake.Object{Resource: podsGR, Namespace: benchNS, Name: benchPod(i), Labels: map[string]string{"app": "web"}})
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := lister.Names(ctx, podsGR, benchNS, webPods); err != nil {
			b.Fatal(err)
		}
	}
}
