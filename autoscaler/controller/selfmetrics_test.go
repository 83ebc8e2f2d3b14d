package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// The forecast gauges show what each forecast asks for while it is usable,
// and lose their series when the forecast goes away or the autoscaler is
// deleted; the replica gauges sit next to them.
func TestForecastSelfMetrics(t *testing.T) {
	f, _, _ := forecastFixture(t, externalMetric("rps", "10"))
	self := f.ctrl.deps.SelfMetrics
	const key = "Autoscaler/ns/web"
	series := func() int {
		return testutil.CollectAndCount(self.forecasts.replicas) + testutil.CollectAndCount(self.forecasts.values)
	}
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	// The history reads 100 everywhere: 100 / 10 per pod asks for 10.
	if got := testutil.ToFloat64(self.forecasts.replicas.WithLabelValues("Autoscaler", "ns", "web", "rps")); got != 10 {
		t.Errorf("forecast_replicas = %v, want 10", got)
	}
	if got := testutil.ToFloat64(self.forecasts.values.WithLabelValues("Autoscaler", "ns", "web", "rps")); got != 100 {
		t.Errorf("forecast_value = %v, want 100", got)
	}
	// Mode Always: applied; the flat history was never short, so the
	// backtest has no ratio and the gauge no series.
	if got := testutil.ToFloat64(self.forecasts.applied.WithLabelValues("Autoscaler", "ns", "web", "rps")); got != 1 {
		t.Errorf("forecast_applied = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(self.forecasts.shortRatio); n != 0 {
		t.Errorf("forecast_backtest_short_ratio has %d series, want none", n)
	}
	if cur, des := testutil.ToFloat64(self.current.WithLabelValues("Autoscaler", "ns", "web")),
		testutil.ToFloat64(self.desired.WithLabelValues("Autoscaler", "ns", "web")); cur != 2 || des != 10 {
		t.Errorf("current_replicas %v, desired_replicas %v, want 2 and 10", cur, des)
	}

	// The spec drops the forecast: its series go.
	indexer := f.ctrl.kinds["Autoscaler"].Informer().GetIndexer()
	obj, _, err := indexer.GetByKey("ns/web")
	if err != nil || obj == nil {
		t.Fatalf("autoscaler not in the informer: %v", err)
	}
	a := obj.(*v1alpha1.Autoscaler).DeepCopy()
	a.Spec.Metrics[0].Forecast = nil
	if err := indexer.Update(a); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(15 * time.Second)
	if _, err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := series(); n != 0 {
		t.Errorf("%d forecast series after the forecast was removed", n)
	}
	if n := testutil.CollectAndCount(self.current); n != 1 {
		t.Errorf("%d current_replicas series, want 1", n)
	}

	// Deleted: no series of it remain.
	if err := indexer.Delete(a); err != nil {
		t.Fatal(err)
	}
	if deleted, err := f.sync(key); err != nil || !deleted {
		t.Fatalf("sync of a deleted autoscaler: %v, %v", deleted, err)
	}
	if n := testutil.CollectAndCount(self.current) + testutil.CollectAndCount(self.desired); n != 0 {
		t.Errorf("%d replica series after deletion", n)
	}
}

func TestForecastGaugesFollowTheFigures(t *testing.T) {
	self, err := NewSelfMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	const key = "Autoscaler/ns/web"
	get := func(metric string) float64 {
		return testutil.ToFloat64(self.forecasts.replicas.WithLabelValues("Autoscaler", "ns", "web", metric))
	}
	self.forecast(key, []evaluation.ForecastFigure{{Index: 0, Metric: "rps", Value: 50, Replicas: 5},
		{Index: 1, Metric: "depth", Value: 7, Replicas: 3}, {Index: 2, Metric: "rps", Value: 90, Replicas: 9}})
	if get("rps") != 9 || get("depth") != 3 {
		t.Fatalf("rps %v (want the larger 9), depth %v", get("rps"), get("depth"))
	}
	self.forecast("Autoscaler/ns/api", []evaluation.ForecastFigure{{Metric: "rps", Value: 1, Replicas: 1}})
	// depth's forecast went away (no history): its series goes, the other
	// autoscaler's stays.
	self.forecast(key, []evaluation.ForecastFigure{{Metric: "rps", Value: 40, Replicas: 4}})
	if n := testutil.CollectAndCount(self.forecasts.replicas); n != 2 {
		t.Fatalf("%d series, want web's rps and api's rps", n)
	}
	if get("rps") != 4 {
		t.Fatalf("rps %v, want 4", get("rps"))
	}
	self.forget(key)
	self.forget("Autoscaler/ns/api")
	if n := testutil.CollectAndCount(self.forecasts.replicas) + testutil.CollectAndCount(self.forecasts.values); n != 0 || len(self.forecasts.set) != 0 {
		t.Fatalf("%d series, %d keys tracked after forget", n, len(self.forecasts.set))
	}
	// A nil SelfMetrics ignores the calls.
	var none *SelfMetrics
	none.forecast(key, []evaluation.ForecastFigure{{Metric: "rps"}})
	none.replicas(key, true, 1, 2)
}

// A forecast without a history (here on a Pods metric) has no series.
func TestForecastSelfMetricsUnusable(t *testing.T) {
	f, _, _ := forecastFixture(t, podsMetric("qps", "10"))
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	if _, err := f.sync("Autoscaler/ns/web"); err != nil {
		t.Fatal(err)
	}
	self := f.ctrl.deps.SelfMetrics
	if n := testutil.CollectAndCount(self.forecasts.replicas) + testutil.CollectAndCount(self.forecasts.values); n != 0 {
		t.Errorf("%d forecast series for a forecast without history", n)
	}
	if n := testutil.CollectAndCount(self.desired); n != 1 {
		t.Errorf("%d desired_replicas series, want 1", n)
	}
}
