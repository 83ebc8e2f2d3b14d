//go:build forecastbench

package forecastbench

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// TestForecastHeldOut is the held-out bench (issue 28 §1, `make
// bench-forecast-heldout`): every trace of testdata/traces (EBBFLOW_STUDY_TRACES
// selects by name), its first HeldOutSpan held on 1-minute steps and
// scaled to a peak of 40 pods of capacity 100, replayed once with the
// reactive HPA at every HeldOutTargets × {default tolerance, tolerance 0},
// Ebbflow's forecast (season Daily, podStartup 90 s, the product's
// default method, tolerance 0) and every peer (tolerance 0), then scored
// over the training and the test span (Spans). It writes both tables (the
// test span's is the one to report) to EBBFLOW_FORECAST_BENCH_OUT when set.
// Every variant must be scored on every trace, and Ebbflow's forecast, a
// floor, must never use fewer replica-hours than the HPA it floors.
func TestForecastHeldOut(t *testing.T) {
	began := time.Now()
	traces, err := SelectTraces(HeldOutTraces(heldOutDir), os.Getenv("EBBFLOW_STUDY_TRACES"))
	if err != nil {
		t.Fatal(err)
	}
	var results []HeldOutResult
	for _, tr := range traces {
		g, err := Hold(tr, HeldOutStep, HeldOutSpan)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := HeldOutReplay(tr.Name, g.Scaled(HeldOutPeakPods*HeldOutCapacity), tr.Interval, Peers)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d steps in %v", tr.Name, len(g.Values), time.Since(start).Round(time.Second))
		checkHeldOut(t, res)
		results = append(results, res)
	}
	if len(results) != len(traces) {
		t.Fatalf("%d of the %d traces selected ran", len(results), len(traces))
	}
	var tables strings.Builder
	WriteHeldOutTable(&tables, "**Test span** (the figures to report)", results, true)
	WriteHeldOutTable(&tables, "**Training span** (where choices may be made)", results, false)
	head := fmt.Sprintf("Held-out bench: %s, default method %s, pod start-up %v, 1-minute steps (coarser traces held), peak %d pods of capacity %.0f, first %v of each trace; "+
		"warm-up 7 days (a quarter of a shorter replay), training span to 60 %%, test span the rest. "+
		"Cell: short pod-seconds ÷ the reactive frontier's at equal replica-hours (* outside the frontier's replica-hours: read at its nearest end) (replica-hours over the HPA at 100 %%, tolerance 0). Run took %v.\n",
		time.Now().UTC().Format(time.RFC3339), evaluation.DefaultForecastMethod, HeldOutStartup, HeldOutPeakPods, HeldOutCapacity, HeldOutSpan, time.Since(began).Round(time.Second))
	writeStudy(t, head+tables.String())
}

// checkHeldOut fails when a span lacks a variant or Ebbflow's forecast
// uses fewer replica-hours than the HPA at 100 %, tolerance 0.
func checkHeldOut(t *testing.T, res HeldOutResult) {
	t.Helper()
	for _, rows := range [][]HeldOutRow{res.Train, res.Test} {
		if len(rows) != 2*len(HeldOutTargets)+1+len(Peers) {
			t.Errorf("%s: %d rows in a span", res.Trace, len(rows))
			continue
		}
		var base, ebbflow float64
		for _, r := range rows {
			switch {
			case r.Variant == "reactive" && r.Target == 1 && r.ToleranceZero:
				base = r.ReplicaHours
			case r.Variant == "Ebbflow":
				ebbflow = r.ReplicaHours
			}
		}
		if ebbflow < base-1e-9 {
			t.Errorf("%s: Ebbflow uses %.1f replica-hours, fewer than the HPA it floors (%.1f)", res.Trace, ebbflow, base)
		}
	}
}
