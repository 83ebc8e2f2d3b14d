package forecastbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// Setup is one replay setting of a trace.
type Setup struct {
	// Capacity is the load one pod serves (the trace is scaled to a peak of
	// PeakPods × Capacity); the score needs ceil(load / Capacity) ready pods.
	Capacity float64
	// Targets are the reactive HPA's targets as fractions of Capacity;
	// ForecastTargets those of the forecast variants, one per Method.
	Targets, ForecastTargets []float64
	Methods                  []forecast.Method
	// Season is the forecasts' season.
	Season v1alpha1.ForecastSeason
	// Step is the sync period; Startup the pods' start-up. The forecasts'
	// lead is Lead, or Startup + Step when Lead is 0.
	Step, Startup, Lead time.Duration
	// Warmup is the time at the start of the replay that is replayed but
	// not scored (the forecasts' first seasons).
	Warmup      time.Duration
	MaxReplicas int32
	// Behavior is every variant's behavior (nil: the defaults).
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	// HistoryRefresh is simulate.Config's: how often the forecasts'
	// history is read again (0: up to each step).
	HistoryRefresh time.Duration
}

// Row is one replay's score after the warm-up.
type Row struct {
	// Variant is "reactive", "oracle" or a forecast method.
	Variant string
	// Target is the fraction of Capacity the HPA keeps each pod at.
	Target          float64
	ReplicaHours    float64
	ShortPodSeconds float64
}

// Replay replays series (the trace read back from Prometheus, starting at
// start) with every variant of s and returns their scores, the reactive
// ones first, then the forecasts, then the oracle.
func Replay(name string, series simulate.Series, start time.Time, s Setup) ([]Row, error) {
	cfg := simulate.Config{Start: start, Step: s.Step, Steps: len(series.Values), InitialReplicas: 1,
		PodStartup: s.Startup, HistoryRefresh: s.HistoryRefresh, Settings: evaluation.DefaultSettings()}
	warm := int(s.Warmup / s.Step)
	if warm >= cfg.Steps {
		return nil, fmt.Errorf("%s: a warm-up of %v leaves no step to score", name, s.Warmup)
	}
	var rows []Row
	var oracle simulate.OracleScore
	run := func(variant string, target float64, f *v1alpha1.MetricForecast) error {
		spec := evaluation.FromAutoscaler(&v1alpha1.AutoscalerSpec{MinReplicas: ptr[int32](1), MaxReplicas: s.MaxReplicas, Behavior: s.Behavior,
			Metrics: []v1alpha1.MetricSpec{{MetricSpec: ExternalMetric(name, target*s.Capacity), Forecast: f}}})
		res, err := simulate.Run(cfg, spec, []simulate.Series{series})
		if err != nil {
			return fmt.Errorf("%s %s at %.0f%%: %w", name, variant, 100*target, err)
		}
		steps := res.Steps[warm:]
		for i := range steps {
			steps[i].Needed = -1
			if v := series.Values[warm+i]; v != simulate.Missing {
				steps[i].Needed = int32(math.Ceil(float64(v)/1000/s.Capacity - 1e-9))
			}
		}
		sc := simulate.ScoreOf(steps, s.Step, s.Startup, 1, s.MaxReplicas)
		rows = append(rows, Row{Variant: variant, Target: target, ReplicaHours: sc.ReplicaHours, ShortPodSeconds: sc.ShortPodSeconds})
		oracle = sc.Oracle
		return nil
	}
	for _, t := range s.Targets {
		if err := run("reactive", t, nil); err != nil {
			return nil, err
		}
	}
	for _, m := range s.Methods {
		for _, t := range s.ForecastTargets {
			lead := s.Lead
			if lead == 0 {
				lead = s.Startup + s.Step
			}
			f := &v1alpha1.MetricForecast{Season: s.Season, Method: v1alpha1.ForecastMethod(m), Lead: &metav1.Duration{Duration: lead}}
			if err := run(string(m), t, f); err != nil {
				return nil, err
			}
		}
	}
	rows = append(rows, Row{Variant: "oracle", Target: 1, ReplicaHours: oracle.ReplicaHours, ShortPodSeconds: oracle.ShortPodSeconds})
	return rows, nil
}

func ptr[T any](v T) *T { return &v }

// Verdict compares a forecast row with the reactive curve.
type Verdict struct {
	Row
	// ReactiveShort is the reactive curve's short pod-seconds at the row's
	// replica-hours (linear between its points; outside them, the nearest
	// point); Outside says the row's replica-hours lie outside the curve.
	ReactiveShort float64
	Outside       bool
	// ShortRatio is ShortPodSeconds / ReactiveShort (NaN when 0/0).
	ShortRatio float64
	// ExtraHours is ReplicaHours over the reactive's at the same target,
	// minus 1.
	ExtraHours float64
}

// Compare returns a verdict per forecast row of rows.
func Compare(rows []Row) []Verdict {
	var curve []Row
	at := map[float64]Row{}
	for _, r := range rows {
		if r.Variant == "reactive" {
			curve = append(curve, r)
			at[r.Target] = r
		}
	}
	slices.SortFunc(curve, func(a, b Row) int {
		switch {
		case a.ReplicaHours < b.ReplicaHours:
			return -1
		case a.ReplicaHours > b.ReplicaHours:
			return 1
		}
		return 0
	})
	var out []Verdict
	for _, r := range rows {
		if r.Variant == "reactive" || r.Variant == "oracle" || len(curve) == 0 {
			continue
		}
		v := Verdict{Row: r}
		v.ReactiveShort, v.Outside = interpolate(curve, r.ReplicaHours)
		v.ShortRatio = r.ShortPodSeconds / v.ReactiveShort
		if same, ok := at[r.Target]; ok {
			v.ExtraHours = r.ReplicaHours/same.ReplicaHours - 1
		}
		out = append(out, v)
	}
	return out
}

func interpolate(curve []Row, hours float64) (float64, bool) {
	return readCurve(len(curve), func(i int) (float64, float64) { return curve[i].ReplicaHours, curve[i].ShortPodSeconds }, hours)
}

// readCurve reads a curve of n points (replica-hours, short pod-seconds),
// sorted by replica-hours, at hours: linear between its points; outside
// them (outside true), the nearest point's.
func readCurve(n int, point func(int) (hours, short float64), hours float64) (short float64, outside bool) {
	firstH, firstS := point(0)
	lastH, lastS := point(n - 1)
	switch {
	case hours <= firstH:
		return firstS, hours < firstH
	case hours >= lastH:
		return lastS, hours > lastH
	}
	for i := 1; i < n; i++ {
		ah, as := point(i - 1)
		bh, bs := point(i)
		if hours <= bh {
			w := (hours - ah) / (bh - ah)
			return as + w*(bs-as), false
		}
	}
	return lastS, false
}

// WriteTable writes the rows and verdicts of one trace and setting as
// Markdown.
func WriteTable(w io.Writer, title string, rows []Row) {
	fmt.Fprintf(w, "\n%s\n\n| variant | target | replica-hours | short pod-seconds | reactive short at equal replica-hours | ratio | extra replica-hours at equal target |\n|---|---|---|---|---|---|---|\n", title)
	verdicts := map[Row]Verdict{}
	for _, v := range Compare(rows) {
		verdicts[v.Row] = v
	}
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.0f%% | %.0f | %.0f |", r.Variant, 100*r.Target, r.ReplicaHours, r.ShortPodSeconds)
		if v, ok := verdicts[r]; ok {
			mark := ""
			if v.Outside {
				mark = " (outside the curve)"
			}
			fmt.Fprintf(w, " %.0f%s | %.2f | %+.1f%% |\n", v.ReactiveShort, mark, v.ShortRatio, 100*v.ExtraHours)
			continue
		}
		fmt.Fprintln(w, " | | |")
	}
}
