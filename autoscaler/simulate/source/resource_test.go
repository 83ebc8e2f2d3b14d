package source

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const resourceRulesFile = `
resourceRules:
  backend: metrics
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[1m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_seconds_total{<<.LabelMatchers>>}[1m]))'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_MemTotal_bytes{<<.LabelMatchers>>})'
    resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, node: {resource: node}}}
    containerLabel: container
  window: 1m
`

// queryFake answers every range query with the series of the last query's
// metric name, recording the queries.
type queryFake struct {
	*fake.Client
	rangeFake
	queries []string
}

func (f *queryFake) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	f.queries = append(f.queries, q)
	return f.rangeFake.QueryRange(ctx, q, start, end, step)
}

// A Resource metric is the sum over the target's pods of their containers'
// usage, read through resourceRules' containerQuery (rendered by the
// adapter's code, in the rules' backend), converted as metrics.k8s.io
// serves it; ContainerResource keeps one container.
func TestReadResource(t *testing.T) {
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.ParseWith([]byte(resourceRulesFile), rules.Options{Mapper: mapper, Backends: []string{"metrics"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	metrics := &queryFake{Client: &fake.Client{}, rangeFake: rangeFake{start: start, step: time.Minute,
		series: []model.Metric{
			{"pod": "web-1-a", "container": "app"},
			{"pod": "web-1-a", "container": "proxy"},
			{"pod": "web-1-b", "container": "app"},
			{"pod": "web-1-b", "container": ""},      // no container: not served
			{"pod": "batch-1-c", "container": "app"}, // not the target's
		},
		value: func(s, k int) float64 { return []float64{0.2504, 0.05, 0.3, 9, 9}[s] * float64(k+1) },
	}}
	def := &rangeFake{Client: &fake.Client{}, start: start, step: time.Minute}
	r, err := New(Options{Rules: set, Client: def, Backends: map[string]Client{"metrics": metrics}, Mapper: mapper,
		NaNValues: rulefile.NaNZero, Range: Range{Start: start, End: start.Add(2 * time.Minute), Step: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if r.ResourceWindow() != time.Minute {
		t.Errorf("window %v, want resourceRules.window", r.ResourceWindow())
	}
	q := Query{Namespace: "shop", PodNames: regexp.MustCompile(`^web-`)}
	cpu := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}
	got, err := r.Series(context.Background(), cpu, q)
	if err != nil {
		t.Fatal(err)
	}
	// Per container rounded to the millicore, as served: 250+50+300, then 501+100+600.
	if got.Values[0] != 600 || got.Values[1] != 1201 {
		t.Errorf("cpu load %v, want [600 1201 …]", got.Values)
	}
	want := `sum by (pod,container) (rate(container_cpu_usage_seconds_total{namespace="shop",pod!="",container!=""}[1m]))`
	if len(metrics.queries) != 1 || metrics.queries[0] != want || len(def.calls) != 0 {
		t.Errorf("queries %q (default backend: %d), want %q on the metrics backend", metrics.queries, len(def.calls), want)
	}
	app := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType,
		ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceMemory, Container: "app"}}
	got, err = r.Series(context.Background(), app, q)
	// app's bytes only, rounded to the byte per pod and container: 0.25+0.3
	// reads 0, then 0.50+0.6 reads 1+1 bytes.
	if err != nil || got.Values[0] != 0 || got.Values[1] != 2000 {
		t.Errorf("app memory %v %v, want [0 2000 …] milli-bytes", got.Values, err)
	}
	if !strings.Contains(metrics.queries[1], "container_memory_working_set_bytes") {
		t.Errorf("memory query %q", metrics.queries[1])
	}

	// Without resourceRules: a clear error.
	plain := newTestReader(t, &rangeFake{start: start, step: time.Minute}, 3)
	if _, err := plain.Series(context.Background(), cpu, q); err == nil || !strings.Contains(err.Error(), "resource metric cpu: the rule file has no resourceRules") {
		t.Errorf("no resourceRules: %v", err)
	}
}
