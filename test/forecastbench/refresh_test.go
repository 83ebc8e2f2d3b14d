//go:build forecastbench

package forecastbench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// TestForecastRefresh measures what reading the history only every
// evaluation.HistoryRefresh (5 minutes), as ebbflow-autoscaler does, costs
// LevelCorrected against the history read up to each step (the other
// studies' replays): between reads the forecast has the last read and the
// metric's current value, which keeps its recent level current. On the
// replays of TestForecastWeekly (12 weeks, NASA 62 days, the first 28 days
// not scored), with a scale-up tolerance of 0, at the start-ups of
// EBBFLOW_STUDY_STARTUPS (default 60,120): the reactive curve, then
// LevelCorrected at 100 and 95 % with a daily and a weekly season, each
// with the history at every step and read every 5 minutes ("refresh"
// rows). Every forecast row is checked to be a floor (checkFloor).
func TestForecastRefresh(t *testing.T) {
	startups := studyStartups(t, []int{60, 120})
	var out strings.Builder
	fmt.Fprintf(&out, "Refresh study: %s, 1-minute steps, peak = %d pods of capacity %.0f, lead = start-up + 1 step, behavior.scaleUp.tolerance 0, first 28 days not scored; refresh rows read the history every %v.\n",
		time.Now().UTC().Format(time.RFC3339), studyPeakPods, studyCapacity, evaluation.HistoryRefresh)
	lc := []forecast.Method{forecast.LevelCorrected}
	refresh := func(s *Setup) { s.Targets, s.HistoryRefresh = nil, evaluation.HistoryRefresh }
	weekly := func(s *Setup) { s.Targets, s.Season = nil, "Weekly" }
	eachStudyTrace(t, weeklySpan, func(tr studyTrace) {
		for _, su := range startups {
			startup := time.Duration(su) * time.Second
			base := studySetup(startup, 4*forecast.Weekly)
			toleranceZero(&base)
			began := time.Now()
			rows := replays(t, tr.name, tr.series, tr.start, base, su, []variant{
				{"", func(*Setup) {}, lc},
				{"refresh ", refresh, lc},
				{"weekly ", weekly, lc},
				{"weekly refresh ", func(s *Setup) { weekly(s); refresh(s) }, lc},
			})
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v, behavior.scaleUp.tolerance 0 (%v)", tr.name, startup, time.Since(began).Round(time.Second)), rows)
		}
	})
	writeStudy(t, out.String())
}
