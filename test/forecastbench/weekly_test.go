//go:build forecastbench

package forecastbench

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
	startups := studyStartups(t, []int{60, 120})
	var out strings.Builder
	fmt.Fprintf(&out, "Weekly study: %s, 1-minute steps, peak = %d pods of capacity %.0f, lead = start-up + 1 step, first 28 days not scored.\n",
		time.Now().UTC().Format(time.RFC3339), studyPeakPods, studyCapacity)
	eachStudyTrace(t, weeklySpan, func(tr studyTrace) {
		for _, su := range startups {
			startup := time.Duration(su) * time.Second
			base := studySetup(startup, 4*forecast.Weekly)
			weekly := func(s *Setup) { s.Targets, s.Season = nil, "Weekly" }
			began := time.Now()
			rows := replays(t, tr.name, tr.series, tr.start, base, su, []variant{
				{"", func(*Setup) {}, []forecast.Method{forecast.LevelCorrected, forecast.SeasonalMax}},
				{"weekly ", weekly, forecast.Methods},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, default tolerance (10 %%), daily rows unprefixed (%v)", tr.name, startup, time.Since(began).Round(time.Second)), rows)
			checkWeeklyActs(t, tr.name, su, rows)
			began = time.Now()
			rows = replays(t, tr.name, tr.series, tr.start, base, su, []variant{
				{"", toleranceZero, []forecast.Method{forecast.LevelCorrected}},
				{"weekly ", func(s *Setup) { toleranceZero(s); weekly(s) }, []forecast.Method{forecast.LevelCorrected}},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, behavior.scaleUp.tolerance 0 (%v)", tr.name, startup, time.Since(began).Round(time.Second)), rows)
		}
	})
	writeStudy(t, out.String())
}

// weeklySpan is the replays' span of a trace: 12 weeks, NASA its 62 days.
func weeklySpan(name string) time.Duration {
	if name == "nasa" {
		return 62 * forecast.Daily
	}
	return 84 * forecast.Daily
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
