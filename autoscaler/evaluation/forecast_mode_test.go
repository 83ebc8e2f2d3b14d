package evaluation

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// flat is a history at value for days days up to start: the reactive path
// is never short on it, so no floor pays off.
func flat(days int, value float64) *forecast.Series {
	h := &forecast.Series{Start: start.Add(-time.Duration(days) * forecast.Daily), Step: time.Minute}
	for at := h.Start; !at.After(start); at = at.Add(time.Minute) {
		h.Values = append(h.Values, value)
	}
	return h
}

// The mode and the backtest decide whether the floor applies: the daily
// peak of dailyPeak (50 at 00:02–00:12, 20 else) is asked for 5 minutes
// ahead; 20 read now asks for 2 replicas (10 per pod), the forecast 5,
// which the default scale-up policy (4 pods a period) paces to 4.
func TestForecastModes(t *testing.T) {
	lead := &metav1.Duration{Duration: 5 * time.Minute}
	for _, c := range []struct {
		name     string
		mode     v1alpha1.ForecastMode
		hist     *forecast.Series
		desired  int32
		status   corev1.ConditionStatus
		reason   string
		messages []string
	}{
		{"Auto, paid off", "", dailyPeak(3, 20, 50), 4, corev1.ConditionTrue, "ForecastAvailable",
			[]string{"asks for 5 replicas", "backtest over 48h0m0s: short 0.00× the reactive path at equal cost", "paid off"}},
		{"Auto, pending: a season of history, none to backtest", "", dailyPeak(1, 20, 50), 2, corev1.ConditionFalse, "BacktestPending",
			[]string{"asks for 5 replicas", "not applied until a backtest shows it pays off", "a backtest needs two seasons of history"}},
		{"Auto, not paid off: never short", "", flat(3, 50), 2, corev1.ConditionFalse, "NotPaidOff",
			[]string{"not applied: backtest over 48h0m0s: the reactive path was never short", "not at most 0.90× for at most +5%"}},
		{"Always", v1alpha1.ForecastAlways, flat(3, 50), 4, corev1.ConditionTrue, "ForecastAvailable",
			[]string{"(mode Always; backtest over"}},
		{"ReportOnly, paid off", v1alpha1.ForecastReportOnly, dailyPeak(3, 20, 50), 2, corev1.ConditionFalse, "ReportOnly",
			[]string{"not applied (mode ReportOnly); backtest over 48h0m0s: short 0.00×"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var h Memory
			f := &v1alpha1.MetricForecast{Lead: lead, Mode: c.mode}
			res := Evaluate(forecastInput(&h, 2, 20_000, f, c.hist), nil)
			if res.Desired != c.desired {
				t.Errorf("desired %d, want %d", res.Desired, c.desired)
			}
			cnd := conditionOf(res.Status, ConditionForecasting)
			if cnd == nil || cnd.Status != c.status || cnd.Reason != c.reason {
				t.Fatalf("Forecasting %+v, want %s/%s", cnd, c.status, c.reason)
			}
			for _, m := range c.messages {
				if !strings.Contains(cnd.Message, m) {
					t.Errorf("message %q lacks %q", cnd.Message, m)
				}
			}
			figs := res.Forecasts()
			if len(figs) != 1 || figs[0].Applied != (c.status == corev1.ConditionTrue) {
				t.Errorf("figures %+v", figs)
			}
		})
	}
}

// The backtest is kept in the history for BacktestRefresh and computed
// again after it, or at once when the forecast's settings change.
func TestForecastBacktestMemo(t *testing.T) {
	var h Memory
	f := &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 5 * time.Minute}}
	in := forecastInput(&h, 2, 20_000, f, dailyPeak(3, 20, 50))
	Evaluate(in, nil)
	first := h.Backtests[0]
	if !first.Result.OK || !first.At.Equal(start) {
		t.Fatalf("memo %+v", first)
	}
	// A flat history within the hour: the memo (paid off) still applies.
	in = forecastInput(&h, 2, 20_000, f, flat(3, 50))
	in.Now = start.Add(BacktestRefresh - time.Second)
	if res := Evaluate(in, nil); !applied(res) || h.Backtests[0].At != first.At {
		t.Errorf("within the hour: applied %v, memo at %v; want the memo of %v, applied", applied(res), h.Backtests[0].At, first.At)
	}
	// After the hour the backtest reads the flat history: not paid off.
	in.Now = start.Add(BacktestRefresh)
	if res := Evaluate(in, nil); applied(res) || !h.Backtests[0].At.Equal(in.Now) || !math.IsNaN(h.Backtests[0].Result.ShortRatio()) {
		t.Errorf("after the hour: applied %v, memo %+v", applied(res), h.Backtests[0])
	}
	// A new lead is a new backtest at once.
	in = forecastInput(&h, 2, 20_000, &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 4 * time.Minute}}, dailyPeak(3, 20, 50))
	in.Now = start.Add(BacktestRefresh + time.Minute)
	if Evaluate(in, nil); !h.Backtests[0].At.Equal(in.Now) {
		t.Errorf("a new lead kept the memo of %v", h.Backtests[0].At)
	}
}

func applied(r Result) bool {
	fs := r.Forecasts()
	return len(fs) == 1 && fs[0].Applied
}

// BenchmarkEvaluateForecast is one evaluation of an autoscaler with a daily
// forecast on 7 days and an hour of one-minute history (what the controller
// reads): "memo" as at most evaluations, the backtest kept from the last
// one; "backtest" as once an hour, the backtest of 3 days computed.
func BenchmarkEvaluateForecast(b *testing.B) {
	hist := dailyPeak(7, 20, 50)
	f := &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 105 * time.Second}}
	for _, memo := range []bool{true, false} {
		name := "backtest"
		if memo {
			name = "memo"
		}
		b.Run(name, func(b *testing.B) {
			var h Memory
			Evaluate(forecastInput(&h, 2, 20_000, f, hist), nil)
			b.ReportAllocs()
			for b.Loop() {
				if !memo {
					h.Backtests = nil
				}
				h.Recommendations = nil
				if res := Evaluate(forecastInput(&h, 2, 20_000, f, hist), nil); !applied(res) {
					b.Fatal("the forecast does not apply")
				}
			}
		})
	}
}
