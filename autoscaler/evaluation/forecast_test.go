package evaluation

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// dailyPeak is days of one-minute history before start: base, and peak for
// the 10 minutes from 2 minutes after the time of day of start.
func dailyPeak(days int, base, peak float64) *forecast.Series {
	h := &forecast.Series{Start: start.Add(-time.Duration(days) * forecast.Daily), Step: time.Minute}
	for at := h.Start; !at.After(start); at = at.Add(time.Minute) {
		v := base
		if tod := at.Sub(start) % forecast.Daily; tod < 0 && tod+forecast.Daily >= 2*time.Minute && tod+forecast.Daily < 12*time.Minute ||
			tod >= 2*time.Minute && tod < 12*time.Minute {
			v = peak
		}
		h.Values = append(h.Values, v)
	}
	return h
}

// forecastInput is an External metric at 10 per replica with a forecast
// (spec set as an Autoscaler's, through FromAutoscaler), value now, and
// its history.
func forecastInput(h *Memory, current int32, value int64, f *v1alpha1.MetricForecast, hist *forecast.Series) Input {
	rd := external(value)
	rd.Series = hist
	in := input(h, current, rd)
	spec := v1alpha1.AutoscalerSpec{MinReplicas: in.Spec.HPA.MinReplicas, MaxReplicas: 20,
		Metrics: []v1alpha1.MetricSpec{{MetricSpec: rd.Spec, Forecast: f}}}
	in.Spec = FromAutoscaler(&spec)
	return in
}

func stepsOf(rec v1alpha1.DecisionRecord, stage string) []v1alpha1.DecisionStep {
	var out []v1alpha1.DecisionStep
	for _, s := range rec.Steps {
		if s.Stage == stage {
			out = append(out, s)
		}
	}
	return out
}

func TestForecastFloor(t *testing.T) {
	lead := &metav1.Duration{Duration: 5 * time.Minute}
	cases := []struct {
		name    string
		current int32
		value   int64 // milli-messages now
		hist    *forecast.Series
		failed  bool // the metric's read fails
		desired int32
		write   bool
		// cond is the Forecasting condition's status; says what its
		// message and the Forecast step's say.
		cond corev1.ConditionStatus
		says string
		// from and to are the Forecast step's.
		from, to int32
	}{
		{"a peak in 5 minutes raises the proposal before it arrives", 2, 20_000, dailyPeak(3, 20, 50), false, 4, true,
			corev1.ConditionTrue, "forecast of queue: 50 in 5m0s (Daily season, SeasonalMax, 3 past seasons) asks for 5 replicas", 2, 5},
		{"the forecast is below the metric: the metric decides", 2, 80_000, dailyPeak(3, 20, 50), false, 4, true,
			corev1.ConditionTrue, "asks for 5 replicas", 8, 8},
		{"the forecast raises what the metric would lower to (the window holds 6)", 6, 20_000, dailyPeak(3, 20, 50), false, 6, false,
			corev1.ConditionTrue, "asks for 5 replicas", 2, 5},
		{"no history read: decided reactively", 2, 20_000, nil, false, 2, false,
			corev1.ConditionFalse, "no forecast for spec.metrics[0].forecast (queue): no history was read for the forecast; the metric decides alone", 2, 2},
		{"less than a season of history: decided reactively", 2, 20_000, dailyPeak(0, 20, 50), false, 2, false,
			corev1.ConditionFalse, "less than one season (24h0m0s)", 2, 2},
		{"the metric failed: no decision, whatever the forecast", 2, 20_000, dailyPeak(3, 20, 50), true, 0, false,
			corev1.ConditionTrue, "asks for 5 replicas", -1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h Memory
			in := forecastInput(&h, c.current, c.value, &v1alpha1.MetricForecast{Lead: lead, Method: "SeasonalMax"}, c.hist)
			if c.failed {
				in.Readings[0].FetchErr, in.Readings[0].Values = errors.New("prometheus is down"), nil
			}
			res := Evaluate(in, nil)
			if res.Write != c.write || res.Desired != c.desired {
				t.Errorf("write %v desired %d, want %v %d", res.Write, res.Desired, c.write, c.desired)
			}
			cnd := conditionOf(res.Status, ConditionForecasting)
			if cnd == nil || cnd.Status != c.cond || !strings.Contains(cnd.Message, c.says) {
				t.Errorf("condition %+v, want %s saying %q", cnd, c.cond, c.says)
			}
			steps := stepsOf(res.Record(), StageForecast)
			if c.from < 0 {
				if len(steps) != 0 || !res.Decision.Failed {
					t.Errorf("a failed metric decided: %+v, steps %+v", res.Decision, steps)
				}
				return
			}
			if len(steps) != 1 || steps[0].From != c.from || steps[0].To != c.to || !strings.Contains(steps[0].Message, c.says) {
				t.Errorf("forecast steps %+v, want %d→%d saying %q", steps, c.from, c.to, c.says)
			}
		})
	}
}

// The raise is paced by the behaviors like any proposal and named as the
// rescale reason.
func TestForecastFloorThroughBehaviors(t *testing.T) {
	var h Memory
	in := forecastInput(&h, 2, 20_000, &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 5 * time.Minute}, Method: "SeasonalMax"}, dailyPeak(3, 20, 90))
	res := Evaluate(in, nil)
	if res.Desired != 4 || !strings.HasPrefix(res.Decision.RescaleReason, "forecast of queue: 90") {
		t.Errorf("desired %d reason %q, want the default limit 4 and the forecast as the reason", res.Desired, res.Decision.RescaleReason)
	}
	if got := StageNames(ptrRecord(res.Record())); strings.Join(got, ",") != "Tolerance,Forecast,ScaleUpLimit" {
		t.Errorf("steps %v, want Tolerance (20 at 10 a replica on 2), Forecast, ScaleUpLimit", got)
	}
}

func ptrRecord(r v1alpha1.DecisionRecord) *v1alpha1.DecisionRecord { return &r }

func TestForecastOptionsDefaults(t *testing.T) {
	o := forecastOptionsOf(&v1alpha1.MetricForecast{})
	if o.Season != forecast.Daily || o.Method != DefaultForecastMethod || o.Lead != DefaultPodStartup+DefaultSyncPeriod {
		t.Errorf("defaults %+v", o)
	}
	o = forecastOptionsOf(&v1alpha1.MetricForecast{Season: v1alpha1.SeasonWeekly, Method: "HoltWinters", PodStartup: &metav1.Duration{Duration: 2 * time.Minute}})
	if o.Season != forecast.Weekly || o.Method != forecast.HoltWinters || o.Lead != 2*time.Minute+DefaultSyncPeriod {
		t.Errorf("weekly, Holt-Winters, 2m start-up: %+v", o)
	}
	if forecastOptionsOf(nil) != nil {
		t.Error("no forecast gave options")
	}
}

func TestForecastReplicas(t *testing.T) {
	q := resource.MustParse("10")
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
	value := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}}
	tol := DefaultSettings().Tolerance
	for _, c := range []struct {
		name    string
		kind    MetricKind
		spec    autoscalingv2.MetricSpec
		value   float64
		current int32
		want    int32
	}{
		{"Pods: the total load over the per-pod target", PodsAverageValue, pods, 101, 3, 11},
		{"Value target: the ratio times the current count", ExternalValue, value, 25, 4, 10},
		{"within the tolerance: the current count", PodsAverageValue, pods, 41, 4, 4},
		{"nothing forecast: nothing asked", PodsAverageValue, pods, 0, 4, 0},
	} {
		if got := forecastReplicas(c.kind, c.spec, c.value, c.current, replicas.UniformTolerances(tol)); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// A forecast on a Resource metric is refused by name and never raises.
func TestForecastOnResourceMetric(t *testing.T) {
	var h Memory
	in := forecastInput(&h, 2, 20_000, &v1alpha1.MetricForecast{}, dailyPeak(3, 20, 90))
	in.Readings[0].Spec = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewMilliQuantity(100, resource.DecimalSI)}}}
	in.Spec.HPA.Metrics[0] = in.Readings[0].Spec
	fs := (&Result{in: in}).forecasts()
	if len(fs) != 1 || fs[0].Forecast.OK || !strings.Contains(fs[0].Message, "spec.metrics[0].forecast (cpu): applies to Pods, Object and External metrics only, not Resource") {
		t.Errorf("forecasts %+v", fs)
	}
}

// LevelCorrected's level reads the metric's current value when the history
// ends before now (the controller reads it every few minutes): the sum of
// an External metric's values, at the time the metrics API reported.
func TestForecastLevelReadsTheCurrentValue(t *testing.T) {
	stale := dailyPeak(3, 20, 20)
	stale.Values = stale.Values[:len(stale.Values)-4] // read 4 minutes ago
	for _, c := range []struct {
		name   string
		values []int64
		at     time.Time
		want   float64
	}{
		// Level over the last 5 minutes: 20, 20 read, 25, 30, 35 on the line
		// to the reading, and the reading 40: 28.33, over the seasons' 20.
		{"two series summed, read now", []int64{15_000, 25_000}, start, 28.333},
		{"no timestamp: now", []int64{40_000}, time.Time{}, 28.333},
		{"a timestamp after now (clock skew): now", []int64{40_000}, start.Add(time.Second), 28.333},
		// Read 2 minutes after the history's end: the 5 minutes before the
		// reading hold four values read (20), 30 on the line, and 40.
		{"read 2 minutes before now", []int64{40_000}, start.Add(-2 * time.Minute), 25},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Memory
			in := forecastInput(&h, 2, 0, &v1alpha1.MetricForecast{Method: "LevelCorrected"}, stale)
			in.Readings[0].Values, in.Readings[0].Timestamp = c.values, c.at
			res := Evaluate(in, nil)
			fs := res.Forecasts()
			if len(fs) != 1 || fs[0].Value < c.want-0.01 || fs[0].Value > c.want+0.01 {
				t.Errorf("forecasts %+v, want the value %.3f", fs, c.want)
			}
		})
	}
}

func TestLatestOf(t *testing.T) {
	obj := Reading{Spec: autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType}, Value: 2_500, Timestamp: start.Add(-time.Minute)}
	pods := Reading{Spec: autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType},
		Samples: replicas.Samples{"a": {Value: 1_000, Timestamp: start}, "b": {Value: 2_500, Timestamp: start},
			"c": {Value: 7_000, Timestamp: start}, "d": {Value: 9_000, Timestamp: start}}, Timestamp: start}
	ready := &replicas.ReadyCondition{Status: corev1.ConditionTrue}
	workload := []replicas.Pod{
		{Name: "a", Phase: corev1.PodRunning, Ready: ready},
		{Name: "b", Phase: corev1.PodRunning, Ready: ready},
		{Name: "c", Phase: corev1.PodRunning, Ready: &replicas.ReadyCondition{Status: corev1.ConditionFalse}},
		{Name: "d", Phase: corev1.PodRunning, Ready: ready, Deleting: true},
		{Name: "e", Phase: corev1.PodRunning, Ready: ready}, // no sample
	}
	failed := external(5_000)
	failed.FetchErr = errors.New("down")
	empty := external(0)
	empty.Values, empty.Empty = nil, true
	huge := external(0)
	huge.Values = []int64{1 << 62, 1 << 62, 1 << 62}
	for name, c := range map[string]struct {
		rd   Reading
		pods []replicas.Pod
		want forecast.Sample
	}{
		"an Object metric's value": {obj, nil, forecast.Sample{At: start.Add(-time.Minute), Value: 2.5}},
		"a Pods metric: summed over the ready pods, not the unready or deleted": {pods, workload, forecast.Sample{At: start, Value: 3.5}},
		"a Pods metric without a ready pod":                                     {pods, workload[2:4], forecast.Sample{}},
		"a failed read":                                                         {failed, nil, forecast.Sample{}},
		"an empty answer":                                                       {empty, nil, forecast.Sample{}},
		"External values whose int64 sum overflows":                             {huge, nil, forecast.Sample{At: start, Value: 3 * float64(1<<62) / 1000}},
	} {
		if got := latestOf(c.rd, start, c.pods); got != c.want {
			t.Errorf("%s: %+v, want %+v", name, got, c.want)
		}
	}
}
