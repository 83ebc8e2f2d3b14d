package forecastbench

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// backfilled backfills traces into a new real Prometheus and returns it
// with the placed traces, each ending an hour ago.
func backfilled(t *testing.T, grids map[string]Grid) (*promtest.Server, map[string]Placed) {
	t.Helper()
	end := time.Now().Add(-time.Hour).Truncate(time.Minute)
	dir := t.TempDir()
	placed := map[string]Placed{}
	var all []Placed
	for name, g := range grids {
		p := Place(name, g, end)
		placed[name] = p
		all = append(all, p)
	}
	if err := Backfill(t.TempDir(), filepath.Join(dir, "data"), all); err != nil {
		t.Fatal(err)
	}
	return promtest.Start(t, promtest.Options{Dir: dir, Retention: Retention}), placed
}

// readBack reads p through the simulate reader and checks it equals what
// was backfilled (to the thousandth), gaps included.
func readBack(t *testing.T, url string, p Placed, peak float64) simulate.Series {
	t.Helper()
	series, err := Read(context.Background(), url, p, p.Step)
	if err != nil {
		t.Fatal(err)
	}
	if len(series.Values) != len(p.Values) {
		t.Fatalf("%s: read %d steps, backfilled %d", p.Name, len(series.Values), len(p.Values))
	}
	for i, v := range series.Values {
		want := p.Values[i]
		if math.IsNaN(want) {
			continue // within the lookback Prometheus still serves the last sample
		}
		if v == simulate.Missing || math.Abs(float64(v)/1000-want) > 0.002+1e-9*peak {
			t.Fatalf("%s at step %d: read %d milli, backfilled %.3f", p.Name, i, v, want)
		}
	}
	return series
}

// TestForecastBenchShort replays 8 days of the taxi trace (a daily
// pattern; testdata/README.md) from a real Prometheus at a 90 s pod start-up, scored after a
// 5-day warm-up: the forecast (the default method) at each of the reactive
// HPA's targets is never shorter of pods than the reactive HPA at that
// target (a floor only adds capacity) for at most 5% more replica-hours,
// and the oracle is never short, on fewer replica-hours than the reactive
// HPA needs not to be short.
func TestForecastBenchShort(t *testing.T) {
	tr := Trace{Name: "taxi", File: "testdata/nyc_taxi_8days.csv", Interval: 30 * time.Minute}
	const peakPods, capacity = 40, 100.0
	g, err := Resample(tr, time.Minute, 8*forecast.Daily)
	if err != nil {
		t.Fatal(err)
	}
	g = g.Scaled(peakPods * capacity)
	prom, placed := backfilled(t, map[string]Grid{tr.Name: g})
	p := placed[tr.Name]
	series := readBack(t, prom.URL(), p, peakPods*capacity)
	t.Run("ebbflow simulate", func(t *testing.T) { simulateWithForecast(t, prom.URL(), p) })
	s := Setup{Capacity: capacity, Targets: []float64{1, 0.9, 0.8}, ForecastTargets: []float64{1, 0.9},
		Methods: []forecast.Method{evaluation.DefaultForecastMethod}, Season: "Daily",
		Step: time.Minute, Startup: 90 * time.Second, Warmup: 5 * forecast.Daily, MaxReplicas: 100}
	rows, err := Replay(tr.Name, series, p.Start, s)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteTable(&b, "taxi, 3 days after a 5-day warm-up, start-up 90 s", rows)
	t.Log(b.String())
	reactive := map[float64]Row{}
	for _, r := range rows {
		if r.Variant == "reactive" {
			reactive[r.Target] = r
		}
	}
	verdicts := Compare(rows)
	if len(verdicts) != 2 {
		t.Fatalf("%d forecast rows, want 2", len(verdicts))
	}
	for _, v := range verdicts {
		r := reactive[v.Target]
		if v.ShortPodSeconds > r.ShortPodSeconds || v.ExtraHours > 0.05 || v.ExtraHours < 0 {
			t.Errorf("%s at %.0f%%: short %.0f pod-seconds on %.0f replica-hours; the reactive HPA %.0f on %.0f: want no more short, at most 5%% more hours",
				v.Variant, 100*v.Target, v.ShortPodSeconds, v.ReplicaHours, r.ShortPodSeconds, r.ReplicaHours)
		}
	}
	o, enough := rows[len(rows)-1], reactive[0.8]
	if o.Variant != "oracle" || o.ShortPodSeconds != 0 || enough.ShortPodSeconds != 0 || o.ReplicaHours >= enough.ReplicaHours {
		t.Errorf("oracle %+v: want never short, on fewer replica-hours than the reactive HPA at 80%% (%+v), never short", o, enough)
	}
}
