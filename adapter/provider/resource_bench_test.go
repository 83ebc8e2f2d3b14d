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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// benchResourceRules is the kube-prometheus shape of resourceRules.
const benchResourceRules = `
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!="",pod!=""}[4m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (irate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[4m]))'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!="",pod!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  window: 5m
`

// resourceCluster is namespaces × podsPerNS pods with two containers each (app and a
// sidecar, as with a service mesh), every one with cpu and memory samples.
type resourceCluster struct {
	pods []*metav1.PartialObjectMetadata
	// answer is the samples of every container, with namespace, pod and container
	// labels: the fake returns it for every query (the provider filters the names).
	answer model.Vector
}

func newResourceCluster(namespaces, podsPerNS int) resourceCluster {
	var c resourceCluster
	ts := model.TimeFromUnixNano(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	for n := range namespaces {
		ns := fmt.Sprintf("team-%03d", n)
		for i := range podsPerNS {
			name := benchPod(n*podsPerNS + i) // distinct across namespaces, as in a real cluster
			c.pods = append(c.pods, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}})
			for _, container := range []string{"app", "istio-proxy"} {
				c.answer = append(c.answer, &model.Sample{
					Metric:    model.Metric{"namespace": model.LabelValue(ns), "pod": model.LabelValue(name), "container": model.LabelValue(container)},
					Value:     model.SampleValue(i%97) / 89,
					Timestamp: ts,
				})
			}
		}
	}
	return c
}

// BenchmarkPodMetrics is the PodMetrics list of kubectl top pods (and of the HPA for
// a Resource metric), Prometheus time excluded: the fake answers at once with every
// container sample. ns=1/pods=1000 is one namespace of 1,000 pods (namespace-wide
// query by default; query=regex lists the names); all-namespaces/pods=10000 is every
// pod of 100 namespaces of 100 pods (one query across namespaces per resource).
// promql-bytes is the length of the cpu query; queries/op counts both resources.
func BenchmarkPodMetrics(b *testing.B) {
	for _, tc := range []struct {
		name          string
		namespaces    int
		podsPerNS     int
		threshold     int
		wantQueries   int
		wantFragments string
	}{
		{"ns=1/pods=1000/query=namespace", 1, 1000, 0, 2, `pod!=""`},
		{"ns=1/pods=1000/query=regex", 1, 1000, -1, 2, `pod=~"`},
		{"all-namespaces/pods=10000", 100, 100, 0, 2, `by (pod,container,namespace)`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := newResourceCluster(tc.namespaces, tc.podsPerNS)
			set, err := rules.Parse([]byte(benchResourceRules), rulefile.DefaultRESTMapper())
			if err != nil {
				b.Fatal(err)
			}
			pc := &fake.Client{QueryFunc: func(string) (model.Vector, error) { return c.answer, nil }}
			p, err := provider.NewResource(provider.ResourceOptions{Prom: pc, NamespaceQueryThreshold: tc.threshold, Registerer: prometheus.NewRegistry()}, set.Resource)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			op := func() error {
				got, err := p.PodMetrics(ctx, c.pods)
				if err == nil && len(got) != len(c.pods) {
					err = fmt.Errorf("got %d pods, want %d", len(got), len(c.pods))
				}
				return err
			}
			if err := op(); err != nil {
				b.Fatal(err)
			}
			queries := pc.Queries()
			if len(queries) != tc.wantQueries || !strings.Contains(queries[0], tc.wantFragments) {
				b.Fatalf("queries %d, first %.200q; want %d with %q", len(queries), queries[0], tc.wantQueries, tc.wantFragments)
			}
			cpuQuery := queries[slices.IndexFunc(queries, func(q string) bool { return strings.Contains(q, "cpu") })]
			var durations []time.Duration
			for b.Loop() {
				start := time.Now()
				err := op()
				durations = append(durations, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
			}
			slices.Sort(durations)
			b.ReportMetric(float64(percentile(durations, 50)), "p50-ns")
			b.ReportMetric(float64(percentile(durations, 99)), "p99-ns")
			b.ReportMetric(float64(len(cpuQuery)), "promql-bytes")
			b.ReportMetric(float64(len(queries)), "queries/op")
		})
	}
}
