package simulate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// rampDays is days of one-minute load that ramps each day from 2 pods'
// worth to 20 in 10 minutes at 09:00 and back at 17:00 (milli-units, 1 a
// pod).
func rampDays(days int) Series {
	s := Series{Values: make([]int64, days*1440)}
	for i := range s.Values {
		m := i % 1440
		pods := int64(2)
		switch {
		case m >= 540 && m < 550:
			pods = 2 + int64(m-540+1)*18/10
		case m >= 550 && m < 1020:
			pods = 20
		}
		s.Values[i] = pods * 1000
	}
	return s
}

func withForecast(s evaluation.Spec, f *v1alpha1.MetricForecast) evaluation.Spec {
	spec := v1alpha1.AutoscalerSpec{MinReplicas: s.HPA.MinReplicas, MaxReplicas: s.HPA.MaxReplicas, Behavior: s.HPA.Behavior,
		Metrics: []v1alpha1.MetricSpec{{MetricSpec: s.HPA.Metrics[0], Forecast: f}}}
	return evaluation.FromAutoscaler(&spec)
}

// The replay feeds each step the history recorded up to it: from the second
// day on, the forecast starts the pods of the 09:00 ramp a start-up ahead
// and the replay is short far less than the reactive one, with the same
// code as the controller; on the first day (less than a season) both are
// the same.
func TestReplayWithForecast(t *testing.T) {
	const days = 3
	cfg := config(days*1440, 2)
	cfg.Step, cfg.PodStartup = time.Minute, 90*time.Second
	load := rampDays(days)
	reactive := fastUp(spec(1, 30, externalMetric("rps", 1000)))
	fc := withForecast(reactive, &v1alpha1.MetricForecast{PodStartup: &metav1.Duration{Duration: cfg.PodStartup}, Mode: v1alpha1.ForecastAlways})
	a, b := run(t, cfg, reactive, load), run(t, cfg, fc, load)
	day := func(r Result, d int) Score {
		return ScoreOf(r.Steps[d*1440:(d+1)*1440], cfg.Step, cfg.PodStartup, 1, 30)
	}
	if first := day(b, 0); !near(first.ShortPodSeconds, day(a, 0).ShortPodSeconds) {
		t.Errorf("first day: forecast short %v, reactive %v; with less than a season they must be equal", first.ShortPodSeconds, day(a, 0).ShortPodSeconds)
	}
	for d := 1; d < days; d++ {
		ra, rb := day(a, d), day(b, d)
		if ra.ShortPodSeconds == 0 || rb.ShortPodSeconds > ra.ShortPodSeconds/2 {
			t.Errorf("day %d: forecast short %v pod-seconds, reactive %v: want at most half", d, rb.ShortPodSeconds, ra.ShortPodSeconds)
		}
		if rb.ReplicaHours > ra.ReplicaHours*1.1 {
			t.Errorf("day %d: forecast %v replica-hours, reactive %v", d, rb.ReplicaHours, ra.ReplicaHours)
		}
		t.Logf("day %d: reactive short %.0f pod-s %.1f replica-h; forecast %.0f, %.1f; oracle %.0f, %.1f", d,
			ra.ShortPodSeconds, ra.ReplicaHours, rb.ShortPodSeconds, rb.ReplicaHours, ra.Oracle.ShortPodSeconds, ra.Oracle.ReplicaHours)
	}
	early := false
	for _, st := range b.Steps[1440+500 : 1440+540] {
		early = early || st.Rescaled && st.Replicas > st.Current && strings.HasPrefix(st.Reason, "forecast of rps")
	}
	if !early {
		t.Error("day 1: no scale-up for the forecast before 09:00")
	}

	// In the default mode the floor waits for a backtest: on day 1 there
	// is a season of history to forecast from but none to backtest on, so
	// the replay is the reactive one; on day 2 the backtest of day 1 paid
	// off and the floor applies.
	auto := run(t, cfg, withForecast(reactive, &v1alpha1.MetricForecast{PodStartup: &metav1.Duration{Duration: cfg.PodStartup}}), load)
	if got, want := day(auto, 1), day(a, 1); !near(got.ShortPodSeconds, want.ShortPodSeconds) || !near(got.ReplicaHours, want.ReplicaHours) {
		t.Errorf("Auto, day 1 (backtest pending): %+v, want the reactive %+v", got, want)
	}
	if got, want := day(auto, 2), day(b, 2); !near(got.ShortPodSeconds, want.ShortPodSeconds) {
		t.Errorf("Auto, day 2 (paid off on day 1): short %v pod-seconds, want Always's %v", got.ShortPodSeconds, want.ShortPodSeconds)
	}
}

func TestValidateForecast(t *testing.T) {
	s := withForecast(spec(1, 10, externalMetric("rps", 1000)), &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 25 * time.Hour}})
	err := Validate(config(10, 1), &s, []Series{constant(10, 1)})
	if err == nil || !strings.Contains(err.Error(), "spec.metrics[0].forecast.lead: 25h0m0s must be in [0, the season 24h0m0s)") {
		t.Errorf("lead of 25h: %v", err)
	}
	s = withForecast(spec(1, 10, externalMetric("rps", 1000)), &v1alpha1.MetricForecast{Method: "Prophet"})
	if err := Validate(config(10, 1), &s, []Series{constant(10, 1)}); err == nil || !strings.Contains(err.Error(), `spec.metrics[0].forecast.method: unknown method "Prophet"`) {
		t.Errorf("method Prophet: %v", err)
	}
}

// With Config.HistoryRefresh the replay hands the evaluation the history of
// its last read, read again at the first evaluation the refresh has passed,
// as the controller does; without it, the history up to each step.
func TestReplayHistoryRefresh(t *testing.T) {
	cfg := config(30, 2)
	cfg.Step = time.Minute
	fc := withForecast(spec(1, 30, externalMetric("rps", 1000)), &v1alpha1.MetricForecast{})
	load := rampDays(1)
	for _, c := range []struct {
		refresh time.Duration
		// lastAt(i) is the last step the history at step i holds.
		lastAt func(i int) int
	}{
		{0, func(i int) int { return i }},
		{5 * time.Minute, func(i int) int { return i - i%5 }},
		{150 * time.Second, func(i int) int { return i - i%3 }},
	} {
		cfg.HistoryRefresh = c.refresh
		r := newReplay(cfg, fc, []Series{load})
		for i := range 30 {
			h := r.historyAt(0, i, true)
			if got := len(h.Values) - 1; got != c.lastAt(i) {
				t.Errorf("refresh %v, step %d: the history ends at step %d, want %d", c.refresh, i, got, c.lastAt(i))
			}
		}
	}
	// A step that only observes (not due) does not read.
	cfg.HistoryRefresh = 5 * time.Minute
	r := newReplay(cfg, fc, []Series{load})
	r.historyAt(0, 0, true)
	if h := r.historyAt(0, 6, false); len(h.Values) != 1 {
		t.Errorf("a step not due read the history: it ends at step %d", len(h.Values)-1)
	}
	// A Pods metric's history (the workload's total, which the controller
	// reads from ebbflow-adapter too) is read as the others.
	r = newReplay(cfg, withForecast(spec(1, 30, podsMetric("rps", 1000)), &v1alpha1.MetricForecast{}), []Series{load})
	for i := range 7 {
		if h := r.historyAt(0, i, true); len(h.Values) != i-i%5+1 {
			t.Errorf("Pods metric, step %d: the history ends at step %d, want %d", i, len(h.Values)-1, i-i%5)
		}
	}
}

// With Config.HistoryRefresh the history is at the controller's step when
// that is a multiple of the replay's: 5 minutes for a weekly season, 1
// minute for a daily one.
func TestReplayHistoryStep(t *testing.T) {
	load := Series{Values: make([]int64, 100)}
	for i := range load.Values {
		load.Values[i] = int64(i) * 1000 // the value says its step
	}
	for _, c := range []struct {
		step, refresh time.Duration
		season        v1alpha1.ForecastSeason
		pods          bool
		want          time.Duration
	}{
		{time.Minute, 5 * time.Minute, v1alpha1.SeasonWeekly, false, 5 * time.Minute},
		{15 * time.Second, 5 * time.Minute, v1alpha1.SeasonDaily, false, time.Minute},
		{time.Minute, 5 * time.Minute, v1alpha1.SeasonDaily, false, time.Minute},
		{45 * time.Second, 5 * time.Minute, v1alpha1.SeasonDaily, false, 45 * time.Second}, // not a multiple
		{time.Minute, 0, v1alpha1.SeasonWeekly, false, time.Minute},                        // no refresh: the replay's step
		{time.Minute, 5 * time.Minute, v1alpha1.SeasonWeekly, true, 5 * time.Minute},       // Pods: as the others
	} {
		cfg := config(len(load.Values), 2)
		cfg.Step, cfg.HistoryRefresh = c.step, c.refresh
		m := externalMetric("rps", 1000)
		if c.pods {
			m = podsMetric("rps", 1000)
		}
		r := newReplay(cfg, withForecast(spec(1, 30, m), &v1alpha1.MetricForecast{Season: c.season}), []Series{load})
		i := 17
		h := r.historyAt(0, i, true)
		k := int(c.want / c.step)
		if h.Step != c.want || len(h.Values) != i/k+1 || h.Values[1] != float64(load.Values[k])/1000 {
			t.Errorf("step %v, refresh %v, %s, pods %v: history at %v with %d values (second %v), want at %v with %d (second %v)",
				c.step, c.refresh, c.season, c.pods, h.Step, len(h.Values), h.Values[1], c.want, i/k+1, float64(load.Values[k])/1000)
		}
	}
}

// The day's level through the metric's value: with the history read every
// 5 minutes, a day whose load doubles 4 minutes before the ramp (after the
// read at 08:55) is served as with the history read at every step:
// LevelCorrected reads the current value. (Without it the level is the past
// days' until the read at 09:00: 2,400 short pod-seconds against 1,800 at
// every step; with it 1,920.)
func TestReplayHistoryRefreshKeepsTheLevel(t *testing.T) {
	const days = 5
	cfg := config(days*1440, 2)
	cfg.Step, cfg.PodStartup = time.Minute, 90*time.Second
	load := rampDays(days)
	for i := (days-1)*1440 + 536; i < len(load.Values); i++ {
		load.Values[i] *= 2 // the last day: twice the load from 08:56
	}
	fc := withForecast(fastUp(spec(1, 60, externalMetric("rps", 1000))), &v1alpha1.MetricForecast{PodStartup: &metav1.Duration{Duration: cfg.PodStartup}})
	lastDay := func(r Result) Score {
		return ScoreOf(r.Steps[(days-1)*1440:], cfg.Step, cfg.PodStartup, 1, 60)
	}
	fresh := lastDay(run(t, cfg, fc, load))
	cfg.HistoryRefresh = 5 * time.Minute
	refreshed := lastDay(run(t, cfg, fc, load))
	t.Logf("last day: history at every step short %.0f pod-s, %.1f replica-h; read every 5 minutes %.0f, %.1f",
		fresh.ShortPodSeconds, fresh.ReplicaHours, refreshed.ShortPodSeconds, refreshed.ReplicaHours)
	if refreshed.ShortPodSeconds > fresh.ShortPodSeconds*1.1+60 || refreshed.ReplicaHours > fresh.ReplicaHours*1.02 {
		t.Errorf("read every 5 minutes: short %v pod-s, %v replica-h; at every step %v, %v",
			refreshed.ShortPodSeconds, refreshed.ReplicaHours, fresh.ShortPodSeconds, fresh.ReplicaHours)
	}
}
