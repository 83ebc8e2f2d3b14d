package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	metricsfake "github.com/ebbflow/ebbflow/autoscaler/metrics/fake"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// historyClient adds histories to the fake metrics client: a constant
// value over the request's range, ending at the clock's time.
type historyClient struct {
	*metricsfake.Client
	clock func() time.Time
	mu    sync.Mutex
	value float64
	// valueAt, if set, is the value at each time instead of value.
	valueAt func(time.Time) float64
	err     error
	reads   []string
	// nothing counts reads the real client would refuse.
	nothing int
}

func (c *historyClient) ExternalHistory(_ context.Context, ns, metric string, sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
	return c.read(ns+"/"+metric+"{"+sel.String()+"} "+req.Range.String()+" "+req.Step.String(), sel, req)
}

func (c *historyClient) ObjectHistory(_ context.Context, ns, metric string, ref autoscalingv2.CrossVersionObjectReference, sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
	return c.read(ns+"/"+ref.Kind+"/"+ref.Name+"/"+metric+"{"+sel.String()+"} "+req.Range.String()+" "+req.Step.String(), sel, req)
}

func (c *historyClient) PodsHistory(_ context.Context, ns, metric string, w metrics.WorkloadPods, podSel, sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
	if _, err := metrics.PodsHistorySelector(sel, w, req); err != nil {
		c.mu.Lock()
		c.nothing++
		c.mu.Unlock()
		return forecast.Series{}, err
	}
	return c.read(ns+"/pods{"+podSel.String()+"}/"+metric+"{"+sel.String()+"} "+w.Key+"="+w.Name+" "+req.Range.String()+" "+req.Step.String(), sel, req)
}

func (c *historyClient) read(what string, sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, what)
	if _, err := metrics.HistorySelector(sel, req); err != nil {
		// What the real client refuses (e.g. labels.Nothing()).
		c.nothing++
		return forecast.Series{}, err
	}
	if c.err != nil {
		return forecast.Series{}, c.err
	}
	// On the step's grid, as a subquery's evaluation times are.
	n := int(req.Range/req.Step) + 1
	h := forecast.Series{Start: c.clock().Add(-req.Range).Truncate(req.Step), Step: req.Step, Values: make([]float64, n)}
	for i := range h.Values {
		h.Values[i] = c.value
		if c.valueAt != nil {
			h.Values[i] = c.valueAt(h.Start.Add(time.Duration(i) * req.Step))
		}
	}
	return h, nil
}

func (c *historyClient) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.reads)
}

// forecastFixture is an Autoscaler on web (2 replicas) whose metric rps
// (External, 10 per pod) reads 20 now — the reactive proposal is 4 — and
// has a daily forecast; its history reads 100 at every time (10 replicas).
// The forecast's mode is Always: a flat history never leaves the reactive
// path short, so the backtest would hold the floor back (TestForecastAuto
// shows it), and these tests are about reading histories.
func forecastFixture(t *testing.T, metric autoscalingv2.MetricSpec) (*fixture, *historyClient, *ebbflowfake.Clientset) {
	return forecastFixtureMode(t, metric, v1alpha1.ForecastAlways)
}

func forecastFixtureMode(t *testing.T, metric autoscalingv2.MetricSpec, mode v1alpha1.ForecastMode) (*fixture, *historyClient, *ebbflowfake.Clientset) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.External = map[string][]int64{"rps": {20_000}}
	hc := &historyClient{Client: f.metrics, clock: f.clock.Now, value: 100}
	reg := prometheus.NewRegistry()
	self, err := NewSelfMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.deps = func(d *Deps) { d.Metrics, d.SelfMetrics = hc, self }
	hpa := newHPA("web", "web", 1, 20, metric)
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 100, PeriodSeconds: 15}}}}
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 2 * time.Minute}, Mode: mode}
	client := ebbflowfake.NewSimpleClientset(a)
	informer := ebbflowinformers.NewSharedInformerFactory(client, 0).Autoscaling().V1alpha1().Autoscalers()
	if err := informer.Informer().GetIndexer().Add(a); err != nil {
		t.Fatal(err)
	}
	f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
	return f, hc, client
}

// lastForecasting is the Forecasting condition of the last status written.
func lastForecasting(t *testing.T, client *ebbflowfake.Clientset) autoscalingv2.HorizontalPodAutoscalerCondition {
	t.Helper()
	var last *v1alpha1.Autoscaler
	for _, act := range client.Actions() {
		if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
			last = u.GetObject().(*v1alpha1.Autoscaler)
		}
	}
	if last == nil {
		t.Fatal("no status written")
	}
	for _, c := range v1alpha1.ToHPAStatus(&last.Status).Conditions {
		if c.Type == "Forecasting" {
			return c
		}
	}
	t.Fatalf("no Forecasting condition in %+v", last.Status)
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

func TestForecastMetricGetsItsHistory(t *testing.T) {
	m := externalMetric("rps", "10")
	m.External.Metric.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}
	f, hc, client := forecastFixture(t, m)
	const key = "Autoscaler/ns/web"
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{10}) {
		t.Fatalf("scale updates %v, want [10]: the forecast's floor", got)
	}
	if want := []string{"ns/rps{queue=orders} 169h0m0s 1m0s"}; !slices.Equal(hc.reads, want) {
		t.Fatalf("history reads %q, want %q", hc.reads, want)
	}
	if c := lastForecasting(t, client); c.Status != corev1.ConditionTrue {
		t.Fatalf("Forecasting %+v", c)
	}
	// Read again only once HistoryRefresh has passed.
	f.clock.Step(HistoryRefresh - time.Second)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := hc.readCount(); n != 1 {
		t.Fatalf("%d history reads within %v", n, HistoryRefresh)
	}
	f.clock.Step(time.Second)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := hc.readCount(); n != 2 {
		t.Fatalf("%d history reads after %v, want 2", n, HistoryRefresh)
	}
	if got := testutil.ToFloat64(f.ctrl.deps.SelfMetrics.history.reads.WithLabelValues("success")); got != 2 {
		t.Fatalf("history_reads_total{result=success} = %v", got)
	}
}

// TestForecastHistoryRefreshReadsTheMinutesSince: a refresh reads only the
// minutes since the last read and historyOverlap before them, and the
// merged history is what a whole read would give; a whole read comes again
// after HistoryFullRead.
func TestForecastHistoryRefreshReadsTheMinutesSince(t *testing.T) {
	m := externalMetric("rps", "10")
	m.External.Metric.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}
	f, hc, _ := forecastFixture(t, m)
	hc.valueAt = func(at time.Time) float64 { return float64(at.Unix() / 60 % 1440) }
	const key = "Autoscaler/ns/web"
	sync := func() {
		t.Helper()
		if _, err := f.sync(key); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	f.clock.Step(HistoryRefresh)
	sync()
	want := []string{"ns/rps{queue=orders} 169h0m0s 1m0s", "ns/rps{queue=orders} 15m0s 1m0s"}
	if !slices.Equal(hc.reads, want) {
		t.Fatalf("history reads %q, want %q", hc.reads, want)
	}
	if len(f.ctrl.histories.entries) != 1 {
		t.Fatalf("%d cached histories, want 1", len(f.ctrl.histories.entries))
	}
	var got *forecast.Series
	for _, e := range f.ctrl.histories.entries {
		got = e.good
	}
	whole, err := hc.read("whole", labels.Everything(), metrics.HistoryRequest{Range: 169 * time.Hour, Step: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Start.Equal(whole.Start) || !slices.Equal(got.Values, whole.Values) {
		t.Fatalf("merged history from %v, %d values, differs from a whole read's from %v, %d values", got.Start, len(got.Values), whole.Start, len(whole.Values))
	}
	// The first read was whole; the refreshes up to HistoryFullRead after
	// it are partial, the one then whole.
	hc.reads = nil
	steps := int(HistoryFullRead/HistoryRefresh) - 1
	for range steps {
		f.clock.Step(HistoryRefresh)
		sync()
	}
	if n := len(hc.reads); n != steps || hc.reads[n-1] != want[0] || hc.reads[n-2] != want[1] {
		t.Fatalf("reads in the next %v: %q; want partial ones, then a whole one at %v", HistoryFullRead, hc.reads, HistoryFullRead)
	}
}

func TestForecastHistoryFailureKeepsLastGood(t *testing.T) {
	f, hc, client := forecastFixture(t, externalMetric("rps", "10"))
	const key = "Autoscaler/ns/web"
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	hc.mu.Lock()
	hc.err = errors.New("adapter down")
	hc.mu.Unlock()
	// Reads fail from now on: the last good history holds the floor for
	// HistoryMaxAge, retried every HistoryRetry.
	for elapsed := HistoryRefresh; elapsed <= HistoryMaxAge; elapsed += HistoryRetry {
		f.clock.Step(HistoryRetry)
		if elapsed == HistoryRefresh {
			f.clock.Step(HistoryRefresh - HistoryRetry)
		}
		if _, err := f.sync(key); err != nil {
			t.Fatal(err)
		}
		if f.targets["web"].Spec.Replicas != 10 {
			t.Fatalf("after %v of failed reads: %d replicas, want the forecast's 10", elapsed, f.targets["web"].Spec.Replicas)
		}
		if c := lastForecasting(t, client); c.Status != corev1.ConditionTrue {
			t.Fatalf("after %v: Forecasting %+v", elapsed, c)
		}
	}
	if got := testutil.ToFloat64(f.ctrl.deps.SelfMetrics.history.reads.WithLabelValues("failure")); got < 20 {
		t.Fatalf("history_reads_total{result=failure} = %v", got)
	}
	// Past HistoryMaxAge the metric decides alone, and the condition says why.
	f.clock.Step(HistoryRetry)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	c := lastForecasting(t, client)
	if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "reading its history failed") || !strings.Contains(c.Message, "adapter down") {
		t.Fatalf("Forecasting %+v", c)
	}
}

// A Pods metric whose scale target's pods are not named by a workload
// controller (the fixture's pods have no owner) has no history: the
// condition says why and the metric decides alone.
func TestForecastOnPodsMetricWithoutWorkloadSaysWhy(t *testing.T) {
	f, hc, client := forecastFixture(t, podsMetric("qps", "10"))
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := hc.readCount(); n != 0 {
		t.Fatalf("%d history reads for pods of no workload", n)
	}
	c := lastForecasting(t, client)
	if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "pod web-a has no controller") || !strings.Contains(c.Message, "spec.metrics[0].forecast") {
		t.Fatalf("Forecasting %+v", c)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates %v, want the reactive [4]", got)
	}
}

// A metric without a selector reads the history of every series (a
// selector of nothing could not carry the reserved requirements).
func TestForecastMetricWithoutSelector(t *testing.T) {
	f, hc, client := forecastFixture(t, externalMetric("rps", "10"))
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns/rps{} 169h0m0s 1m0s"}; !slices.Equal(hc.reads, want) || hc.nothing != 0 {
		t.Fatalf("history reads %q (%d refused), want %q", hc.reads, hc.nothing, want)
	}
	if c := lastForecasting(t, client); c.Status != corev1.ConditionTrue {
		t.Fatalf("Forecasting %+v", c)
	}
}

// An Object metric's forecast reads the described object's history with
// the metric's selector, and floors the proposal like an External one.
func TestForecastObjectMetricGetsItsHistory(t *testing.T) {
	q := resource.MustParse("10")
	m := autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "hits", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"code": "200"}}},
		Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
	}}
	f, hc, client := forecastFixture(t, m)
	f.metrics.Objects = map[string]int64{"Service/api/hits": 20_000}
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ns/Service/api/hits{code=200} 169h0m0s 1m0s"}; !slices.Equal(hc.reads, want) {
		t.Fatalf("history reads %q, want %q", hc.reads, want)
	}
	if hc.nothing != 0 {
		t.Fatalf("%d reads with a selector of nothing", hc.nothing)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{10}) {
		t.Fatalf("scale updates %v, want [10]: the forecast's floor over the reactive 2 (20 over 10 a pod)", got)
	}
	if c := lastForecasting(t, client); c.Status != corev1.ConditionTrue {
		t.Fatalf("Forecasting %+v", c)
	}
	// A failing read: the metric decides alone, and the condition says why.
	f2, hc2, client2 := forecastFixture(t, m)
	f2.metrics.Objects = map[string]int64{"Service/api/hits": 20_000}
	hc2.err = errors.New("adapter down")
	if _, err := f2.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f2.scaleUpdates(); len(got) != 0 {
		t.Fatalf("scale updates %v, want none: the reactive 2 is the current count", got)
	}
	if c := lastForecasting(t, client2); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "adapter down") {
		t.Fatalf("Forecasting %+v", c)
	}
}

// The histories the controller asks are within the adapter's bounds (range
// at most five weeks, step at least 30 s, at most 11,000 points).
func TestHistoryRequestForBounds(t *testing.T) {
	for _, o := range []evaluation.ForecastOptions{{Season: forecast.Daily}, {Season: forecast.Weekly}} {
		req := historyRequestFor(o)
		if _, err := metrics.HistorySelector(labels.Everything(), req); err != nil {
			t.Errorf("%v season: %v", o.Season, err)
		}
		if req.Range > 35*24*time.Hour || req.Step < 30*time.Second || req.Range < forecast.DefaultSeasons*o.Season {
			t.Errorf("%v season: %+v", o.Season, req)
		}
	}
}

func TestHistoryCacheBoundedAndForgotten(t *testing.T) {
	var hc historyCache
	now := time.Unix(0, 0)
	for i := range maxHistories {
		hc.entry(fmt.Sprintf("Autoscaler/ns/a%d\x000", i), now)
	}
	// Full of recently used entries: a new one is not kept.
	hc.entry("Autoscaler/ns/new\x000", now)
	if _, ok := hc.entries["Autoscaler/ns/new\x000"]; ok || len(hc.entries) != maxHistories {
		t.Fatalf("%d entries, new one kept: %v", len(hc.entries), ok)
	}
	// Once they are unused for HistoryMaxAge they make room.
	later := now.Add(HistoryMaxAge + time.Second)
	hc.entry("Autoscaler/ns/new\x000", later)
	if _, ok := hc.entries["Autoscaler/ns/new\x000"]; !ok || len(hc.entries) != 1 {
		t.Fatalf("%d entries after eviction", len(hc.entries))
	}
	hc.entry("Autoscaler/ns/new2\x000", later)
	hc.forget("Autoscaler/ns/new")
	if len(hc.entries) != 1 {
		t.Fatalf("forget left %d entries, want new2's", len(hc.entries))
	}
}

// Between two history reads the forecast's recent level takes the metric's
// current value, read at every evaluation: the history (100 at every time)
// is read once, then the queue reads 20 for 4 minutes; the level over the
// last 5 minutes is 100, 100 read, 80, 60, 40 on the line, and 20 now.
func TestForecastLevelFollowsTheCurrentValueBetweenReads(t *testing.T) {
	m := externalMetric("rps", "10")
	f, hc, client := forecastFixture(t, m)
	f.metrics.External = map[string][]int64{"rps": {100_000}}
	const key = "Autoscaler/ns/web"
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if c := lastForecasting(t, client); !strings.Contains(c.Message, "forecast of rps: 100 in 2m0s") {
		t.Fatalf("Forecasting %q, want the history's 100", c.Message)
	}
	f.clock.Step(4 * time.Minute)
	f.metrics.External, f.metrics.Timestamp = map[string][]int64{"rps": {20_000}}, f.clock.Now()
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := hc.readCount(); n != 1 {
		t.Fatalf("%d history reads, want 1 (within %v)", n, HistoryRefresh)
	}
	if c := lastForecasting(t, client); !strings.Contains(c.Message, "forecast of rps: 66.67 in 2m0s") {
		t.Fatalf("Forecasting %q, want 66.67: the level of the last 5 minutes with the current value", c.Message)
	}
}

// In the default mode the floor applies only once its backtest paid off:
// on a flat history the reactive path is never short, so the metric
// decides alone and the condition says why.
func TestForecastAuto(t *testing.T) {
	f, _, client := forecastFixtureMode(t, externalMetric("rps", "10"), "")
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("scale updates %v, want none: the metric alone keeps 2 (the floor would ask for 10)", got)
	}
	c := lastForecasting(t, client)
	if c.Status != "False" || c.Reason != "NotPaidOff" || !strings.Contains(c.Message, "the reactive path was never short") {
		t.Errorf("Forecasting %+v", c)
	}
}
