package forecastbench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// heldOutDir is testdata/traces, the held-out traces.
const heldOutDir = "testdata/traces"

// TestHeldOutTracesHold reads every held-out trace (the files and their
// README agree) and checks Hold never invents a value: every known grid
// value is a recorded sample's value.
func TestHeldOutTracesHold(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(heldOutDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range HeldOutTraces(heldOutDir) {
		if !strings.Contains(string(readme), filepath.Base(tr.File)) {
			t.Errorf("%s: not in %s/README.md", tr.File, heldOutDir)
		}
		pts, err := load(tr.File)
		if err != nil {
			t.Fatal(err)
		}
		recorded := map[float64]bool{}
		for _, p := range pts {
			recorded[p.value] = true
		}
		g, err := Hold(tr, HeldOutStep, 3*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		known := 0
		for i, v := range g.Values {
			if math.IsNaN(v) {
				continue
			}
			known++
			if !recorded[v] {
				t.Fatalf("%s: step %d holds %v, which no sample recorded", tr.Name, i, v)
			}
		}
		if known < len(g.Values)/2 {
			t.Errorf("%s: only %d of %d steps known in its first 3 days", tr.Name, known, len(g.Values))
		}
	}
}

// TestHoldGap checks Hold holds a sample for its interval only: a missing
// sample is a gap, not the previous value.
func TestHoldGap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(file, []byte("unix_seconds,value\n0,1\n300,2\n900,4\n1200,8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Hold(Trace{Name: "t", File: file, Interval: 5 * time.Minute}, time.Minute, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 1, 1, 1, 2, 2, 2, 2, 2, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), 4, 4, 4, 4, 4, 8, 8, 8, 8, 8}
	if len(g.Values) != len(want) {
		t.Fatalf("%d steps, want %d (the last sample's interval)", len(g.Values), len(want))
	}
	for i, w := range want {
		if v := g.Values[i]; !(v == w || math.IsNaN(v) && math.IsNaN(w)) {
			t.Errorf("step %d: %v, want %v", i, v, w)
		}
	}
}

// dailyLoad is n days at one-minute steps of a daily wave between 500 and
// 3500 with a little deterministic noise.
func dailyLoad(days int) []float64 {
	out := make([]float64, days*1440)
	for i := range out {
		out[i] = 2000 - 1500*math.Cos(2*math.Pi*float64(i%1440)/1440) + 50*math.Sin(float64(i)*0.7)
	}
	return out
}

// TestPeersCausal checks every peer is causal (changing the load after a
// step changes no prediction up to it) and predicts a daily wave after its
// history: each peer's prediction stays near the load ahead.
func TestPeersCausal(t *testing.T) {
	loads := dailyLoad(6)
	ctx := PeerContext{Step: time.Minute, Start: time.Unix(0, 0).UTC(), Startup: HeldOutStartup, PerPod: HeldOutCapacity}
	cut := 5*1440 + 333
	changed := append([]float64(nil), loads...)
	for i := cut + 1; i < len(changed); i++ {
		changed[i] = 9 * changed[i]
	}
	for _, p := range Peers {
		a, b := p.Predict(loads, ctx), p.Predict(changed, ctx)
		for i := 0; i <= cut; i++ {
			if !(a[i] == b[i] || math.IsNaN(a[i]) && math.IsNaN(b[i])) {
				t.Fatalf("%s: step %d predicts %v, then %v once the load after step %d changed", p.Name, i, a[i], b[i], cut)
			}
		}
		// on the sixth day every peer predicts, within 30 % of the load
		// over the next hour (Crane predicts its largest, × 1.2)
		for i := 5 * 1440; i < 6*1440-60; i++ {
			hi := 0.0
			for _, v := range loads[i : i+61] {
				hi = math.Max(hi, v)
			}
			if math.IsNaN(a[i]) || a[i] < 0.7*loads[i] || a[i] > 1.3*1.2*hi+HeldOutCapacity {
				t.Fatalf("%s: step %d predicts %v for a load of %.0f (%.0f at most in the next hour)", p.Name, i, a[i], loads[i], hi)
			}
		}
	}
}

// TestFrontier checks the lower envelope and its reading.
func TestFrontier(t *testing.T) {
	rows := []HeldOutRow{
		{Variant: "reactive", ReplicaHours: 10, ShortPodSeconds: 100},
		{Variant: "reactive", ReplicaHours: 12, ShortPodSeconds: 120}, // dominated
		{Variant: "reactive", ReplicaHours: 14, ShortPodSeconds: 40},
		{Variant: "reactive", ReplicaHours: 20, ShortPodSeconds: 10},
	}
	f := Frontier(rows)
	if len(f) != 3 || f[1].ReplicaHours != 14 {
		t.Fatalf("frontier %+v, want the points at 10, 14 and 20 replica-hours", f)
	}
	for _, c := range []struct {
		hours, short float64
		outside      bool
	}{{8, 100, true}, {12, 70, false}, {17, 25, false}, {20, 10, false}, {30, 10, true}} {
		short, outside := FrontierShort(f, c.hours)
		if math.Abs(short-c.short) > 1e-9 || outside != c.outside {
			t.Errorf("at %v replica-hours: %v (outside %v), want %v (%v)", c.hours, short, outside, c.short, c.outside)
		}
	}
}

// TestHeldOutReplayShort replays the first 3 days of the per-minute
// held-out trace with every variant and checks the machinery: every
// variant scored on both spans, the reactive rows dearer at lower
// targets, the forecast and the floors never below the HPA at 100 %,
// tolerance 0, and a verdict for each non-reactive row.
func TestHeldOutReplayShort(t *testing.T) {
	tr := HeldOutTraces(heldOutDir)[0]
	g, err := Hold(tr, HeldOutStep, 3*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	res, err := HeldOutReplay(tr.Name, g.Scaled(HeldOutPeakPods*HeldOutCapacity), tr.Interval, Peers)
	if err != nil {
		t.Fatal(err)
	}
	want := 2*len(HeldOutTargets) + 1 + len(Peers)
	for _, rows := range [][]HeldOutRow{res.Train, res.Test} {
		if len(rows) != want {
			t.Fatalf("%d rows, want %d", len(rows), want)
		}
		base := map[bool]map[float64]float64{false: {}, true: {}}
		for _, r := range rows[:2*len(HeldOutTargets)] {
			base[r.ToleranceZero][r.Target] = r.ReplicaHours
		}
		for zero, byTarget := range base {
			if byTarget[0.8] < byTarget[1] {
				t.Errorf("tolerance 0 %v: the HPA at 80 %% uses %.1f replica-hours, fewer than at 100 %% (%.1f)", zero, byTarget[0.8], byTarget[1])
			}
		}
		for _, r := range rows[2*len(HeldOutTargets):] {
			if r.ReplicaHours < base[true][1]-1e-9 {
				t.Errorf("%s uses %.1f replica-hours, fewer than the HPA it floors (%.1f)", r.Variant, r.ReplicaHours, base[true][1])
			}
		}
		if v := HeldOutVerdicts(rows); len(v) != 1+len(Peers) {
			t.Errorf("%d verdicts, want %d", len(v), 1+len(Peers))
		}
	}
	var out strings.Builder
	WriteHeldOutTable(&out, "test span", []HeldOutResult{res}, true)
	for _, p := range Peers {
		if !strings.Contains(out.String(), p.Name) {
			t.Errorf("the table has no column for %s:\n%s", p.Name, out.String())
		}
	}
	t.Log(out.String())
}
