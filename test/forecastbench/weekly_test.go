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
)

// TestForecastWeekly compares a daily and a weekly season on the traces of
// TestForecastStudy (same grid, replayed straight from it): the first 12
// weeks of each trace (NASA: its 62 days), the first 4 weeks (the weekly
// forecasts' 4 seasons) replayed but not scored by any variant, so daily
// and weekly rows score the same days. At pod start-ups of
// EBBFLOW_STUDY_STARTUPS seconds (default 60,120): the reactive curve,
// every method with a weekly season and LevelCorrected and SeasonalMax with
// a daily one at 100, 90 and 80 %, the oracle; then with a scale-up
// tolerance of 0 the reactive curve and LevelCorrected daily and weekly at
// 100 and 95 %. EBBFLOW_STUDY_TRACES selects traces. Every forecast is a
// floor (checkFloor) and the weekly forecasts must exist after the warm-up
// (they raise the replica-hours on some trace).
func TestForecastWeekly(t *testing.T) {
	const peakPods, capacity = 40, 100.0
	startups := studyStartups(t, []int{60, 120})
	want := os.Getenv("EBBFLOW_STUDY_TRACES")
	zero := resource.MustParse("0")
	var out strings.Builder
	fmt.Fprintf(&out, "Weekly study: %s, 1-minute steps, peak = %d pods of capacity %.0f, lead = start-up + 1 step, first 28 days not scored.\n",
		time.Now().UTC().Format(time.RFC3339), peakPods, capacity)
	for _, tr := range Traces(tracesDir()) {
		if want != "" && !strings.Contains(","+want+",", ","+tr.Name+",") {
			continue
		}
		span := 84 * forecast.Daily
		if tr.Name == "nasa" {
			span = 62 * forecast.Daily
		}
		g, err := Resample(tr, time.Minute, span)
		if err != nil {
			t.Fatal(err)
		}
		series := milli(g.Scaled(peakPods * capacity))
		for _, su := range startups {
			startup := time.Duration(su) * time.Second
			base := Setup{Capacity: capacity, Targets: []float64{1, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6}, ForecastTargets: []float64{1, 0.9, 0.8},
				Season: "Daily", Step: time.Minute, Startup: startup, Warmup: 4 * forecast.Weekly, MaxReplicas: 100}
			weekly := func(s *Setup) { s.Targets, s.Season = nil, "Weekly" }
			tol0 := func(s *Setup) {
				s.Targets, s.ForecastTargets = s.Targets[:5], []float64{1, 0.95}
				s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &zero}}
			}
			began := time.Now()
			rows := replays(t, tr.Name, series, g.Start, base, su, []variant{
				{"", func(*Setup) {}, []forecast.Method{forecast.LevelCorrected, forecast.SeasonalMax}},
				{"weekly ", weekly, forecast.Methods},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, default tolerance (10 %%), daily rows unprefixed (%v)", tr.Name, startup, time.Since(began).Round(time.Second)), rows)
			checkWeeklyActs(t, tr.Name, su, rows)
			began = time.Now()
			rows = replays(t, tr.Name, series, g.Start, base, su, []variant{
				{"", tol0, []forecast.Method{forecast.LevelCorrected}},
				{"weekly ", func(s *Setup) { tol0(s); weekly(s) }, []forecast.Method{forecast.LevelCorrected}},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, behavior.scaleUp.tolerance 0 (%v)", tr.Name, startup, time.Since(began).Round(time.Second)), rows)
		}
	}
	t.Log(out.String())
	if f := os.Getenv("EBBFLOW_FORECAST_BENCH_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkWeeklyActs fails when no weekly forecast row uses more
// replica-hours than the reactive HPA at its target: after 4 weeks of
// warm-up a weekly forecast exists, and a floor that never raises is not
// measured at all.
func checkWeeklyActs(t *testing.T, name string, startup int, rows []Row) {
	t.Helper()
	reactive := map[float64]float64{}
	for _, r := range rows {
		if r.Variant == "reactive" {
			reactive[r.Target] = r.ReplicaHours
		}
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Variant, "weekly ") && r.ReplicaHours > reactive[r.Target]+1e-9 {
			return
		}
	}
	t.Errorf("%s at %d s: no weekly forecast raised the replica-hours of the reactive HPA", name, startup)
}
