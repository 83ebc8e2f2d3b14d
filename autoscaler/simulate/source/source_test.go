package source

import (
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

const testRules = `
rules:
- seriesQuery: 'rps{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

// rangeFake is the adapter's fake Prometheus with range queries: every
// series has value(step index) at every step, except where value is NaN
// and skip says so.
type rangeFake struct {
	*fake.Client
	start  time.Time
	step   time.Duration
	series []model.Metric
	value  func(series, step int) float64
	skip   func(series, step int) bool
	calls  [][2]time.Time
}

func (f *rangeFake) QueryRange(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	f.calls = append(f.calls, [2]time.Time{start, end})
	var m model.Matrix
	for i, lbls := range f.series {
		s := &model.SampleStream{Metric: lbls}
		for t := start; !t.After(end); t = t.Add(step) {
			k := int(t.Sub(f.start) / f.step)
			if f.skip == nil || !f.skip(i, k) {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(f.value(i, k))})
			}
		}
		m = append(m, s)
	}
	return m, nil
}

func newTestReader(t *testing.T, f *rangeFake, steps int) *Reader {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse([]byte(testRules), mapper)
	if err != nil {
		t.Fatal(err)
	}
	f.Client = &fake.Client{SeriesByMatch: map[string][]fake.Series{
		`rps{namespace!="",pod!=""}`: {{Name: "rps", Labels: map[string]string{"namespace": "ns", "pod": "web-1-a"}}},
		`queue{queue!=""}`:           {{Name: "queue", Labels: map[string]string{"queue": "orders"}}},
	}}
	r, err := New(Options{Rules: set, Client: f, Mapper: mapper, NaNValues: rulefile.NaNZero,
		Range: Range{Start: f.start, End: f.start.Add(time.Duration(steps-1) * f.step), Step: f.step}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func averageValue(v string) autoscalingv2.MetricTarget {
	q := resource.MustParse(v)
	return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}
}

// A Pods metric is the sum over the target's pods, read in chunks of at
// most prom.MaxRangePoints steps; NaN reads 0, infinities and absent
// samples are missing.
func TestReadPodsChunked(t *testing.T) {
	const steps = 25_000
	f := &rangeFake{
		start: time.Unix(1_700_000_000, 0), step: 15 * time.Second,
		series: []model.Metric{
			{"pod": "web-1-a", "namespace": "ns"},
			{"pod": "web-1-b", "namespace": "ns"},
			{"pod": "other-1-c", "namespace": "ns"}, // not the target's
		},
		value: func(s, k int) float64 {
			switch {
			case s == 2:
				return 1e6
			case k == 7:
				return math.NaN()
			case k == 8 && s == 0:
				return math.Inf(1)
			}
			return float64(k%100) + 0.5
		},
		skip: func(_, k int) bool { return k >= 20_000 && k < 20_010 },
	}
	r := newTestReader(t, f, steps)
	spec := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Target: averageValue("10")}}
	got, err := r.Series(context.Background(), spec, Query{Namespace: "ns", PodNames: regexp.MustCompile(`^web-`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 {
		t.Errorf("%d range queries for %d steps, want 3", len(f.calls), steps)
	}
	for _, c := range f.calls {
		if n := c[1].Sub(c[0])/f.step + 1; n > 10_000 {
			t.Errorf("a chunk of %d steps", n)
		}
	}
	for _, k := range []int{0, 9_999, 10_000, 19_999, 24_999} {
		if want := int64(2 * (1000*(k%100) + 500)); got.Values[k] != want {
			t.Errorf("step %d: %d, want %d (two pods)", k, got.Values[k], want)
		}
	}
	if got.Values[7] != 0 || got.Values[8] != 8500 || got.Values[20_005] != simulate.Missing {
		t.Errorf("NaN step %d (want 0), Inf step %d (want the other pod's 8500), gap %d (want missing)", got.Values[7], got.Values[8], got.Values[20_005])
	}
	again, err := r.Series(context.Background(), spec, Query{Namespace: "ns", PodNames: regexp.MustCompile(`^web-`)})
	if err != nil || len(f.calls) != 3 || &again.Values[0] != &got.Values[0] {
		t.Errorf("the same metric was read again (%d queries)", len(f.calls))
	}
}

func TestReadExternalAndErrors(t *testing.T) {
	f := &rangeFake{start: time.Unix(1_700_000_000, 0), step: time.Minute,
		series: []model.Metric{{"queue": "orders"}, {"queue": "orders", "shard": "2"}},
		value:  func(s, k int) float64 { return float64(10*s + k) },
	}
	r := newTestReader(t, f, 5)
	ext := func(name string) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: averageValue("3")}}
	}
	got, err := r.Series(context.Background(), ext("queue"), Query{Namespace: "ns"})
	if err != nil || got.Values[4] != 1000*(4+14) {
		t.Fatalf("external: %v %v, want the sum of both series", got.Values, err)
	}
	f.value = func(int, int) float64 { return math.NaN() }
	f.skip = func(int, int) bool { return true }
	for _, tc := range []struct {
		spec autoscalingv2.MetricSpec
		want string
	}{
		{ext("unknown_external"), "no rule in the rule file's externalRules serves it"},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType}, "not read from Prometheus"},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Target: averageValue("1")}}, "no value of it in Prometheus"},
	} {
		if _, err := r.Series(context.Background(), tc.spec, Query{Namespace: "ns"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", describe(tc.spec), err, tc.want)
		}
	}
}

func TestActualQuery(t *testing.T) {
	if got := ActualQuery("Deployment", "shop", `we"b`); got != `kube_deployment_status_replicas{namespace="shop",deployment="we\"b"}` {
		t.Errorf("query %s", got)
	}
	if ActualQuery("Rollout", "shop", "web") != "" {
		t.Error("a query for a kind kube-state-metrics does not know")
	}
}

// A rule naming a backend is discovered in and read from that backend only;
// the other rules stay on the default backend.
func TestReadRoutesToRuleBackend(t *testing.T) {
	const file = `
externalRules:
- seriesQuery: 'queue{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'jobs{queue!=""}'
  backend: second
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.ParseWith([]byte(file), rules.Options{Mapper: mapper, Backends: []string{"second"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	backend := func(metric string, value float64) *rangeFake {
		return &rangeFake{
			Client: &fake.Client{SeriesByMatch: map[string][]fake.Series{
				metric + `{queue!=""}`: {{Name: metric, Labels: map[string]string{"queue": "q"}}},
			}},
			start: start, step: time.Minute, series: []model.Metric{{"queue": "q"}},
			value: func(int, int) float64 { return value },
		}
	}
	def, second := backend("queue", 1), backend("jobs", 2)
	r, err := New(Options{Rules: set, Client: def, Backends: map[string]Client{"second": second}, Mapper: mapper,
		NaNValues: rulefile.NaNZero, Range: Range{Start: start, End: start.Add(4 * time.Minute), Step: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ext := func(name string) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name}, Target: averageValue("1")}}
	}
	jobs, err := r.Series(context.Background(), ext("jobs"), Query{Namespace: "ns"})
	if err != nil || jobs.Values[0] != 2000 {
		t.Fatalf("jobs: %v %v, want 2 from the second backend", jobs.Values, err)
	}
	if len(second.calls) != 1 || len(def.calls) != 0 {
		t.Errorf("range queries: default %d, second %d; want the jobs query on second only", len(def.calls), len(second.calls))
	}
	queue, err := r.Series(context.Background(), ext("queue"), Query{Namespace: "ns"})
	if err != nil || queue.Values[0] != 1000 || len(def.calls) != 1 || len(second.calls) != 1 {
		t.Errorf("queue: %v %v (default %d, second %d queries), want 1 from the default backend", queue.Values, err, len(def.calls), len(second.calls))
	}
}

// A metric a rule could name but of which Prometheus holds no series is
// refused once the adapter's own lookup (with its on-demand discovery) found
// nothing, naming the rule file's section and the range searched.
func TestSeriesNotFound(t *testing.T) {
	f := &rangeFake{start: time.Unix(1_700_000_000, 0), step: 15 * time.Second, value: func(int, int) float64 { return 1 }}
	r := newTestReader(t, f, 10)
	clear(f.Client.SeriesByMatch)
	for _, tc := range []struct {
		spec autoscalingv2.MetricSpec
		want string
	}{
		{autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "rps"}, Target: averageValue("10")}},
			"no rule in the rule file's rules serves it from the series Prometheus holds between 2023-11-14T22:08:20Z and"},
		{autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: averageValue("10")}},
			"no rule in the rule file's externalRules serves it from the series"},
	} {
		_, err := r.Series(context.Background(), tc.spec, Query{Namespace: "ns"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.spec.Type, err, tc.want)
		}
	}
}
