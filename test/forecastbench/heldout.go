package forecastbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// The held-out bench mirrors the held-out evaluation: pods start in 90 s,
// the load needs ceil(load / 100) ready pods, the HPA reads the total load
// as an External metric with AverageValue 100 (× target), the forecast is
// {season: Daily, podStartup: 90s} with the product's default method, and
// Ebbflow and the peers run with behavior.scaleUp.tolerance 0. Each trace
// is scaled to a peak of 40 pods and replayed once, on 1-minute steps
// (coarser traces held, never interpolated: Hold), from its first sample;
// the steps are then scored over two spans (Spans).
const (
	HeldOutStartup  = 90 * time.Second
	HeldOutCapacity = 100.0
	HeldOutPeakPods = 40
	HeldOutStep     = time.Minute
	HeldOutMax      = 100
	// HeldOutSpan caps the replayed part of a trace (its first 12 weeks).
	HeldOutSpan = 84 * 24 * time.Hour
)

// HeldOutTargets are the reactive frontier's targets, each replayed at the
// default tolerance and at tolerance 0.
var HeldOutTargets = []float64{1, 0.99, 0.98, 0.97, 0.95, 0.9, 0.8}

// Spans is the walk-forward split of a replay of steps: the first warm-up
// steps are replayed, never scored (the forecasts' and peers' history),
// the training span runs from there to 60 % of the replay and is the only
// one any choice may look at, the test span is the rest (the figures to
// report). Warm-up: 7 days, or a quarter of a replay shorter than 28 days.
func Spans(steps int, step time.Duration) (warm, split int) {
	warm = int(7 * 24 * time.Hour / step)
	if q := steps / 4; q < warm {
		warm = q
	}
	return warm, steps * 6 / 10
}

// HeldOutRow is one variant's score over one span.
type HeldOutRow struct {
	// Variant is "reactive" (Tolerance says which), "Ebbflow" or a peer's
	// name.
	Variant string
	Target  float64
	// ToleranceZero is true for behavior.scaleUp.tolerance 0.
	ToleranceZero   bool
	ReplicaHours    float64
	ShortPodSeconds float64
}

// HeldOutResult is one trace's rows per span.
type HeldOutResult struct {
	Trace string
	// Interval is the trace's own; Daily its correlation one day later
	// over the training span (the only span a choice may read).
	Interval    time.Duration
	Daily       float64
	Train, Test []HeldOutRow
	// TrainFrom, TestFrom and End bound the spans (the replay starts at
	// the trace's first sample; before TrainFrom is the warm-up).
	TrainFrom, TestFrom, End time.Time
}

// HeldOutReplay replays one trace's grid (already scaled) with every
// reactive variant, Ebbflow's forecast and every peer, and scores each
// over the training and the test span.
func HeldOutReplay(name string, g Grid, interval time.Duration, peers []Peer) (HeldOutResult, error) {
	load := milli(g)
	warm, split := Spans(len(g.Values), g.Step)
	at := func(i int) time.Time { return g.Start.Add(time.Duration(i) * g.Step) }
	res := HeldOutResult{Trace: name, Interval: interval, Daily: Autocorrelation(g.Values[warm:split], int(24*time.Hour/g.Step)),
		TrainFrom: at(warm), TestFrom: at(split), End: at(len(g.Values))}
	score := func(row HeldOutRow, steps []simulate.Step) {
		for i := range steps {
			steps[i].Needed = -1
			if v := load.Values[i]; v != simulate.Missing {
				steps[i].Needed = int32(math.Ceil(float64(v)/1000/HeldOutCapacity - 1e-9))
			}
		}
		for _, span := range []struct {
			rows *[]HeldOutRow
			a, b int
		}{{&res.Train, warm, split}, {&res.Test, split, len(steps)}} {
			sc := simulate.ScoreOf(steps[span.a:span.b], g.Step, HeldOutStartup, 1, HeldOutMax)
			r := row
			r.ReplicaHours, r.ShortPodSeconds = sc.ReplicaHours, sc.ShortPodSeconds
			*span.rows = append(*span.rows, r)
		}
	}
	run := func(row HeldOutRow, f *v1alpha1.MetricForecast, extra []float64) error {
		steps, err := heldOutRun(name, g, load, row, f, extra)
		if err != nil {
			return fmt.Errorf("%s %s at %.0f%%: %w", name, row.Variant, 100*row.Target, err)
		}
		score(row, steps)
		return nil
	}
	for _, zero := range []bool{false, true} {
		for _, t := range HeldOutTargets {
			if err := run(HeldOutRow{Variant: "reactive", Target: t, ToleranceZero: zero}, nil, nil); err != nil {
				return res, err
			}
		}
	}
	f := &v1alpha1.MetricForecast{Season: v1alpha1.ForecastSeason("Daily"), PodStartup: &metav1.Duration{Duration: HeldOutStartup}}
	if err := run(HeldOutRow{Variant: "Ebbflow", Target: 1, ToleranceZero: true}, f, nil); err != nil {
		return res, err
	}
	ctx := PeerContext{Step: g.Step, Start: g.Start, Startup: HeldOutStartup, PerPod: HeldOutCapacity}
	for _, p := range peers {
		if err := run(HeldOutRow{Variant: p.Name, Target: 1, ToleranceZero: true}, nil, p.Predict(g.Values, ctx)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// heldOutRun is one replay: the load as an External metric at row's
// target, with forecast f, and extra (a peer's predicted load, NaN: none)
// as a second External metric at the same target.
func heldOutRun(name string, g Grid, load simulate.Series, row HeldOutRow, f *v1alpha1.MetricForecast, extra []float64) ([]simulate.Step, error) {
	cfg := simulate.Config{Start: g.Start, Step: g.Step, Steps: len(g.Values), InitialReplicas: 1,
		PodStartup: HeldOutStartup, HistoryRefresh: evaluation.HistoryRefresh, Settings: evaluation.DefaultSettings()}
	spec := &v1alpha1.AutoscalerSpec{MinReplicas: ptr[int32](1), MaxReplicas: HeldOutMax,
		Metrics: []v1alpha1.MetricSpec{{MetricSpec: ExternalMetric(name, row.Target*HeldOutCapacity), Forecast: f}}}
	if row.ToleranceZero {
		zero := resource.MustParse("0")
		spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &zero}}
	}
	series := []simulate.Series{load}
	if extra != nil {
		spec.Metrics = append(spec.Metrics, v1alpha1.MetricSpec{MetricSpec: ExternalMetric(name+"-peer", row.Target*HeldOutCapacity)})
		series = append(series, peerSeries(load, extra))
	}
	res, err := simulate.Run(cfg, evaluation.FromAutoscaler(spec), series)
	if err != nil {
		return nil, err
	}
	return res.Steps, nil
}

// peerSeries is a peer's prediction as a series: missing where the load
// is (the peer reads the same metric), 0 where the peer predicts nothing
// (its metric then proposes no more than the load's).
func peerSeries(load simulate.Series, predicted []float64) simulate.Series {
	s := simulate.Series{Values: make([]int64, len(load.Values))}
	for i, v := range predicted {
		switch {
		case load.Values[i] == simulate.Missing:
			s.Values[i] = simulate.Missing
		case math.IsNaN(v):
			s.Values[i] = 0
		default:
			s.Values[i] = int64(math.Round(v * 1000))
		}
	}
	return s
}

// Frontier is the lower envelope of points (replica-hours, short
// pod-seconds): the points no other point matches or beats on both, by
// replica-hours.
func Frontier(rows []HeldOutRow) []HeldOutRow {
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b HeldOutRow) int {
		switch {
		case a.ReplicaHours != b.ReplicaHours:
			return cmpFloat(a.ReplicaHours, b.ReplicaHours)
		default:
			return cmpFloat(a.ShortPodSeconds, b.ShortPodSeconds)
		}
	})
	var out []HeldOutRow
	for _, r := range sorted {
		if len(out) == 0 || r.ShortPodSeconds < out[len(out)-1].ShortPodSeconds {
			out = append(out, r)
		}
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// FrontierShort is the frontier's short pod-seconds at replica-hours
// hours: linear between its points; outside them (outside), the nearest
// point's (below the cheapest, the cheapest's; above the dearest, the
// dearest's, as if more replica-hours bought the reactive HPA nothing).
func FrontierShort(frontier []HeldOutRow, hours float64) (short float64, outside bool) {
	return readCurve(len(frontier), func(i int) (float64, float64) { return frontier[i].ReplicaHours, frontier[i].ShortPodSeconds }, hours)
}

// HeldOutVerdict is one non-reactive row against the reactive rows of its
// span.
type HeldOutVerdict struct {
	HeldOutRow
	// Ratio is ShortPodSeconds over the reactive frontier's at equal
	// replica-hours (NaN when 0/0, shown so; +Inf when only the frontier is
	// never short); ExtraHours its replica-hours over the HPA's at 100 %,
	// tolerance 0, minus 1.
	Ratio, ExtraHours float64
	Outside           bool
}

// HeldOutVerdicts compares each non-reactive row of rows with the reactive
// frontier of rows.
func HeldOutVerdicts(rows []HeldOutRow) []HeldOutVerdict {
	var reactive []HeldOutRow
	base := math.NaN()
	for _, r := range rows {
		if r.Variant == "reactive" {
			reactive = append(reactive, r)
			if r.Target == 1 && r.ToleranceZero {
				base = r.ReplicaHours
			}
		}
	}
	if len(reactive) == 0 {
		return nil
	}
	frontier := Frontier(reactive)
	var out []HeldOutVerdict
	for _, r := range rows {
		if r.Variant == "reactive" {
			continue
		}
		short, outside := FrontierShort(frontier, r.ReplicaHours)
		out = append(out, HeldOutVerdict{HeldOutRow: r, Ratio: r.ShortPodSeconds / short, ExtraHours: r.ReplicaHours/base - 1, Outside: outside})
	}
	return out
}

// WriteHeldOutTable writes one span's table: a row per trace, a column per
// non-reactive variant (ratio to the frontier at equal replica-hours,
// extra replica-hours over the HPA at 100 %, tolerance 0), then a summary
// per column over the daily traces (correlation one day later ≥ 0.5 on the
// training span): how many have a ratio ≤ 0.5, and the worst.
func WriteHeldOutTable(w io.Writer, title string, results []HeldOutResult, test bool) {
	var variants []string
	for _, res := range results {
		for _, v := range HeldOutVerdicts(spanRows(res, test)) {
			if !slices.Contains(variants, v.Variant) {
				variants = append(variants, v.Variant)
			}
		}
	}
	fmt.Fprintf(w, "\n%s\n\n| trace | interval | span (UTC) | daily r (training) | %s |\n|---|---|---|---|%s\n", title,
		strings.Join(variants, " | "), strings.Repeat("---|", len(variants)))
	type worst struct {
		trace string
		ratio float64
	}
	good, daily := map[string]int{}, 0
	worsts := map[string]worst{}
	for _, res := range results {
		isDaily := res.Daily >= 0.5
		if isDaily {
			daily++
		}
		cells := map[string]string{}
		for _, v := range HeldOutVerdicts(spanRows(res, test)) {
			mark := ""
			if v.Outside {
				mark = "*"
			}
			cells[v.Variant] = fmt.Sprintf("%.2f%s (%+.1f %%)", v.Ratio, mark, 100*v.ExtraHours)
			if math.IsNaN(v.Ratio) {
				cells[v.Variant] = fmt.Sprintf("0/0%s (%+.1f %%)", mark, 100*v.ExtraHours)
			}
			if !isDaily || math.IsNaN(v.Ratio) {
				continue // 0/0: neither is ever short, no ratio to rank
			}
			if v.Ratio <= 0.5 {
				good[v.Variant]++
			}
			if wv, ok := worsts[v.Variant]; !ok || v.Ratio > wv.ratio {
				worsts[v.Variant] = worst{res.Trace, v.Ratio}
			}
		}
		from, to := res.TrainFrom, res.TestFrom
		if test {
			from, to = res.TestFrom, res.End
		}
		fmt.Fprintf(w, "| %s | %v | %s → %s | %.2f |", res.Trace, res.Interval, from.Format("2006-01-02 15:04"), to.Format("2006-01-02 15:04"), res.Daily)
		for _, v := range variants {
			fmt.Fprintf(w, " %s |", cells[v])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| **daily traces ≤ 0.5 (of %d)** | | | |", daily)
	for _, v := range variants {
		fmt.Fprintf(w, " %d |", good[v])
	}
	fmt.Fprintf(w, "\n| **worst daily trace** | | | |")
	for _, v := range variants {
		if wv, ok := worsts[v]; ok {
			fmt.Fprintf(w, " %s %.2f |", wv.trace, wv.ratio)
			continue
		}
		fmt.Fprint(w, " – |")
	}
	fmt.Fprintln(w)
}

func spanRows(res HeldOutResult, test bool) []HeldOutRow {
	if test {
		return res.Test
	}
	return res.Train
}

// milli is g as a simulate series (milli-units, Missing in gaps).
func milli(g Grid) simulate.Series {
	s := simulate.Series{Values: make([]int64, len(g.Values))}
	for i, v := range g.Values {
		s.Values[i] = simulate.Missing
		if !math.IsNaN(v) {
			s.Values[i] = int64(math.Round(v * 1000))
		}
	}
	return s
}
