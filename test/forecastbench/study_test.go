//go:build forecastbench

package forecastbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// TestForecastStudy is the sweep behind docs/benchmarks.md's "Where the
// reactive HPA falls short": the traces of TestForecastBenchFull (put on
// the same grid, replayed straight from it rather than through
// Prometheus, which TestForecastBenchFull shows reads them back equal),
// at pod start-ups of EBBFLOW_STUDY_STARTUPS seconds (default
// 0,60,120,300), each with the reactive curve, LevelCorrected and
// SeasonalMax at 100, 90 and 80 % with a lead of start-up + one step and
// of start-up + 5 minutes, the oracle, and the reactive curve and
// LevelCorrected again with a scale-up tolerance of 0. EBBFLOW_STUDY_TRACES
// (comma-separated names) selects traces. A floor only adds: every
// forecast uses at least the replica-hours of the reactive HPA at its
// target, and the oracle is never short.
func TestForecastStudy(t *testing.T) {
	startups := studyStartups(t, []int{0, 60, 120, 300})
	var out strings.Builder
	eachStudyTrace(t, func(string) time.Duration { return 63 * forecast.Daily }, func(tr studyTrace) {
		for _, su := range startups {
			startup := time.Duration(su) * time.Second
			base := studySetup(startup, 7*forecast.Daily)
			both := []forecast.Method{forecast.LevelCorrected, forecast.SeasonalMax}
			rows := replays(t, tr.name, tr.series, tr.start, base, su, []variant{
				{"", func(*Setup) {}, both},
				{"lead+5m ", func(s *Setup) { s.Targets, s.Lead = nil, startup+5*time.Minute }, both},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, default tolerance (10 %%)", tr.name, startup), rows)
			rows = replays(t, tr.name, tr.series, tr.start, base, su, []variant{{"", toleranceZero, []forecast.Method{forecast.LevelCorrected}}})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, behavior.scaleUp.tolerance 0", tr.name, startup), rows)
		}
	})
	writeStudy(t, out.String())
}

// The studies replay each trace scaled to a peak of studyPeakPods pods of
// studyCapacity each.
const studyPeakPods, studyCapacity = 40, 100.0

// studyTrace is one trace of a study on its 1-minute grid.
type studyTrace struct {
	name   string
	series simulate.Series
	start  time.Time
}

// eachStudyTrace calls f with each trace EBBFLOW_STUDY_TRACES
// (comma-separated names) selects, all by default, resampled at 1-minute
// steps over span(name) and scaled to the studies' peak.
func eachStudyTrace(t *testing.T, span func(name string) time.Duration, f func(studyTrace)) {
	t.Helper()
	traces, err := SelectTraces(Traces(tracesDir()), os.Getenv("EBBFLOW_STUDY_TRACES"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		g, err := Resample(tr, time.Minute, span(tr.Name))
		if err != nil {
			t.Fatal(err)
		}
		f(studyTrace{name: tr.Name, series: milli(g.Scaled(studyPeakPods * studyCapacity)), start: g.Start})
	}
}

// studySetup is the studies' base setup at a pod start-up: reactive
// targets from 100 to 60 %, forecasts at 100, 90 and 80 % with a daily
// season, one-minute steps, rows scored after warmup.
func studySetup(startup, warmup time.Duration) Setup {
	return Setup{Capacity: studyCapacity, Targets: []float64{1, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6}, ForecastTargets: []float64{1, 0.9, 0.8},
		Season: "Daily", Step: time.Minute, Startup: startup, Warmup: warmup, MaxReplicas: 100}
}

// toleranceZero sets a scale-up tolerance of 0, at reactive targets from
// 100 to 80 % and forecasts at 100 and 95 %.
func toleranceZero(s *Setup) {
	zero := resource.MustParse("0")
	s.Targets, s.ForecastTargets = s.Targets[:5], []float64{1, 0.95}
	s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &zero}}
}

// writeStudy logs a study's tables and writes them to
// EBBFLOW_FORECAST_BENCH_OUT when set.
func writeStudy(t *testing.T, out string) {
	t.Helper()
	t.Log(out)
	if f := os.Getenv("EBBFLOW_FORECAST_BENCH_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// studyStartups is EBBFLOW_STUDY_STARTUPS (comma-separated seconds), def
// when unset.
func studyStartups(t *testing.T, def []int) []int {
	t.Helper()
	s := os.Getenv("EBBFLOW_STUDY_STARTUPS")
	if s == "" {
		return def
	}
	var startups []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 0 {
			t.Fatalf("EBBFLOW_STUDY_STARTUPS: %q is not a number of seconds", f)
		}
		startups = append(startups, n)
	}
	return startups
}

// variant is one set of replays: its rows' label prefix, its change to
// the base setup and its forecast methods.
type variant struct {
	label   string
	tweak   func(*Setup)
	methods []forecast.Method
}

// replays runs each variant of base (without forecasts at a start-up of 0)
// and returns all rows, checked by checkFloor.
func replays(t *testing.T, name string, series simulate.Series, start time.Time, base Setup, startup int, vs []variant) []Row {
	t.Helper()
	var rows []Row
	for _, v := range vs {
		s := base
		v.tweak(&s)
		s.Methods = v.methods
		if startup == 0 {
			s.Methods = nil // no forecast is needed without a start-up
		}
		if len(s.Targets)+len(s.Methods) == 0 {
			continue
		}
		r, err := Replay(name, series, start, s)
		if err != nil {
			t.Fatal(err)
		}
		checkFloor(t, name, startup, r)
		if v.label != "" {
			r = r[:len(r)-1] // the oracle is the same
		}
		for i := range r {
			r[i].Variant = v.label + r[i].Variant
		}
		rows = append(rows, r...)
	}
	return rows
}

// checkFloor fails when a forecast row of one Replay uses fewer
// replica-hours than the reactive row at its target, or the oracle is short.
func checkFloor(t *testing.T, name string, startup int, rows []Row) {
	t.Helper()
	reactive := map[float64]Row{}
	for _, r := range rows {
		if strings.HasSuffix(r.Variant, "reactive") {
			reactive[r.Target] = r
		}
	}
	for _, r := range rows {
		switch {
		case strings.HasSuffix(r.Variant, "oracle"):
			if r.ShortPodSeconds != 0 {
				t.Errorf("%s at %d s: the oracle is short %.0f pod-seconds", name, startup, r.ShortPodSeconds)
			}
		case strings.HasSuffix(r.Variant, "reactive"):
		default:
			if re, ok := reactive[r.Target]; ok && r.ReplicaHours < re.ReplicaHours-1e-9 {
				t.Errorf("%s at %d s: %s at %.0f%% uses %.1f replica-hours, fewer than the reactive HPA's %.1f: a floor only adds",
					name, startup, r.Variant, 100*r.Target, r.ReplicaHours, re.ReplicaHours)
			}
		}
	}
}
