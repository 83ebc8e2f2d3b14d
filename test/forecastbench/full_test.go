//go:build forecastbench

package forecastbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// TestForecastBenchFull replays the first 9 weeks of each trace (NASA: its
// 62 days) at one-minute steps, pod start-ups of 60 and 120 s, the reactive
// HPA at 8 targets and every forecast method at 3, and writes the tables
// (`make bench-forecast`; EBBFLOW_FORECAST_BENCH_OUT names the file, and
// the plot of the 120 s start-up goes next to it, .png for .md).
func TestForecastBenchFull(t *testing.T) {
	const peakPods, capacity = 40, 100.0
	grids := map[string]Grid{}
	traces := Traces(tracesDir())
	for _, tr := range traces {
		g, err := Resample(tr, time.Minute, 63*forecast.Daily)
		if err != nil {
			t.Fatal(err)
		}
		grids[tr.Name] = g.Scaled(peakPods * capacity)
	}
	prom, placed := backfilled(t, grids)
	var out strings.Builder
	fmt.Fprintf(&out, "Forecast bench: %s, 1-minute steps (the sync period), peak = %d pods of capacity %.0f, daily season, lead = start-up + 1 step, first 7 days not scored.\n",
		time.Now().UTC().Format(time.RFC3339), peakPods, capacity)
	var panels []Panel
	for _, tr := range traces {
		p := placed[tr.Name]
		series := readBack(t, prom.URL(), p, peakPods*capacity)
		for _, startup := range []time.Duration{60 * time.Second, 120 * time.Second} {
			s := Setup{Capacity: capacity, Targets: []float64{1, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6}, ForecastTargets: []float64{1, 0.9, 0.8},
				Methods: forecast.Methods, Season: "Daily", Step: time.Minute, Startup: startup, Warmup: 7 * forecast.Daily, MaxReplicas: 100}
			began := time.Now()
			rows, err := Replay(tr.Name, series, p.Start, s)
			if err != nil {
				t.Fatal(err)
			}
			WriteTable(&out, fmt.Sprintf("**%s**, start-up %v (%d replays in %v)", tr.Name, startup, len(rows)-1, time.Since(began).Round(time.Second)), rows)
			if startup == 120*time.Second {
				panels = append(panels, Panel{Title: fmt.Sprintf("%s, pod start-up %v", tr.Name, startup), Rows: rows})
			}
		}
	}
	t.Log(out.String())
	if f := os.Getenv("EBBFLOW_FORECAST_BENCH_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := WritePlot(strings.TrimSuffix(f, ".md")+".png", panels); err != nil {
			t.Fatal(err)
		}
	}
}

// tracesDir holds the shared traces (EBBFLOW_TRACES overrides it).
func tracesDir() string {
	if d := os.Getenv("EBBFLOW_TRACES"); d != "" {
		return d
	}
	return "/work/shared/traces"
}
