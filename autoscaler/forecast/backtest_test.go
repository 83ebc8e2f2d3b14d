package forecast

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// ramps is a quiet load of 200 that jumps to 2,000 at 09:00 each day for an
// hour, at one-minute steps: a reactive path is short at every jump, a
// daily forecast is not.
func ramps(days int) Series {
	h := Series{Start: t0, Step: time.Minute, Values: make([]float64, days*1440)}
	for i := range h.Values {
		h.Values[i] = 200
		if m := i % 1440; m >= 9*60 && m < 10*60 {
			h.Values[i] = 2000
		}
	}
	return h
}

// noise is a load without a season: 1,000 ± 500 drawn every minute.
func noise(days int) Series {
	rng := rand.New(rand.NewPCG(1, 2))
	h := Series{Start: t0, Step: time.Minute, Values: make([]float64, days*1440)}
	for i := range h.Values {
		h.Values[i] = 500 + 1000*rng.Float64()
	}
	return h
}

func backtestRequest(now time.Time) BacktestRequest {
	return BacktestRequest{Request: Request{Now: now, Lead: 105 * time.Second, Season: Daily, Method: LevelPeak},
		Span: 3 * Daily, Unit: 100, Startup: 90 * time.Second, Stabilization: 5 * time.Minute}
}

func TestBacktestPaysOffOnARepeatedRamp(t *testing.T) {
	h := ramps(7)
	b := BacktestOf(h, backtestRequest(t0.Add(7*Daily-time.Minute)))
	if !b.OK {
		t.Fatalf("backtest: %s %s", b.Reason, b.Message)
	}
	// Each day the reactive path is 18 pods short for the two minutes of
	// start-up after 09:00: 3 days × 18 × 2 min = 1.8 pod-hours.
	if got, want := b.Reactive.Short, 3*18*2/60.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("reactive short %.4f pod-hours, want %.4f", got, want)
	}
	if b.Floor.Short != 0 {
		t.Errorf("floor short %.4f pod-hours, want 0 (the ramp repeats exactly)", b.Floor.Short)
	}
	if !b.PaysOff() {
		t.Errorf("a floor that removes the whole shortfall at %+.1f%% cost does not pay off: %s", 100*b.ExtraCost(), b.Summary())
	}
	if b.Forecasts != 3*1440 || b.Missed != 0 {
		t.Errorf("%d forecasts (%d missed), want %d (0)", b.Forecasts, b.Missed, 3*1440)
	}
	if !strings.Contains(b.Summary(), "short 0.00× the reactive path at equal cost") {
		t.Errorf("summary %q", b.Summary())
	}
}

func TestBacktestDoesNotPayOffWithoutASeason(t *testing.T) {
	h := noise(7)
	b := BacktestOf(h, backtestRequest(t0.Add(7*Daily-time.Minute)))
	if !b.OK {
		t.Fatalf("backtest: %s %s", b.Reason, b.Message)
	}
	if b.PaysOff() {
		t.Errorf("a floor on seasonless noise pays off: %s", b.Summary())
	}
	if b.Reactive.Short <= 0 || b.Frontier.Cost != b.Floor.Cost && b.Floor.Cost > b.Reactive.Cost {
		t.Errorf("reactive %+v, floor %+v, frontier %+v", b.Reactive, b.Floor, b.Frontier)
	}
}

// The frontier spends the floor's replica-hours on a lower target; it is
// never shorter than the reactive path's shortfall at a higher cost allows.
func TestBacktestFrontierSpendsTheFloorsCost(t *testing.T) {
	h := noise(5)
	b := BacktestOf(h, backtestRequest(t0.Add(5*Daily-time.Minute)))
	if !b.OK {
		t.Fatalf("backtest: %s %s", b.Reason, b.Message)
	}
	if b.Floor.Cost <= b.Reactive.Cost {
		t.Fatalf("the floor added nothing on noise: %+v vs %+v", b.Floor, b.Reactive)
	}
	if math.Abs(b.Frontier.Cost-b.Floor.Cost) > 1e-6*b.Floor.Cost {
		t.Errorf("frontier cost %.3f, want the floor's %.3f", b.Frontier.Cost, b.Floor.Cost)
	}
	if b.Frontier.Short > b.Reactive.Short {
		t.Errorf("frontier short %.3f above the reactive path's %.3f at a higher cost", b.Frontier.Short, b.Reactive.Short)
	}
}

func TestBacktestNeedsTwoSeasons(t *testing.T) {
	h := ramps(2)
	b := BacktestOf(h, backtestRequest(t0.Add(2*Daily-2*time.Minute)))
	if b.OK || b.Reason != ReasonShortHistory || !strings.Contains(b.Message, "two seasons") {
		t.Errorf("backtest of less than two seasons: %+v", b)
	}
	b = BacktestOf(h, backtestRequest(t0.Add(2*Daily-time.Minute)))
	if !b.OK || b.To.Sub(b.From) != Daily-time.Minute {
		t.Errorf("backtest of two seasons: %+v", b)
	}
}

func TestBacktestInvalid(t *testing.T) {
	h := ramps(3)
	now := t0.Add(3*Daily - time.Minute)
	for name, edit := range map[string]func(*BacktestRequest){
		"negative unit":       func(r *BacktestRequest) { r.Unit = -1 },
		"NaN unit":            func(r *BacktestRequest) { r.Unit = math.NaN() },
		"span of 9 seasons":   func(r *BacktestRequest) { r.Span = 9 * Daily },
		"negative start-up":   func(r *BacktestRequest) { r.Startup = -time.Second },
		"stabilization a day": func(r *BacktestRequest) { r.Stabilization = Daily },
		"unknown method":      func(r *BacktestRequest) { r.Method = "Crystal" },
	} {
		req := backtestRequest(now)
		edit(&req)
		if b := BacktestOf(h, req); b.OK || b.Reason != ReasonInvalid || b.PaysOff() {
			t.Errorf("%s: %+v", name, b)
		}
	}
}

// A value target scores the load itself (Unit 0): the same verdict on the
// ramp.
func TestBacktestContinuous(t *testing.T) {
	req := backtestRequest(t0.Add(7*Daily - time.Minute))
	req.Unit = 0
	b := BacktestOf(ramps(7), req)
	if !b.PaysOff() || b.Reactive.Short <= 0 {
		t.Errorf("continuous backtest on the ramp: %s", b.Summary())
	}
}

func BenchmarkBacktest(b *testing.B) {
	h := daily(7)
	req := backtestRequest(t0.Add(7*Daily - time.Minute))
	for b.Loop() {
		if bt := BacktestOf(h, req); !bt.OK {
			b.Fatal(bt.Message)
		}
	}
}

// FuzzBacktest: any history and settings give a backtest or a reason,
// never a panic; a floor only adds replicas, so it is never shorter of
// them than the target alone nor cheaper, and the frontier spends the
// floor's cost without being shorter than the target alone.
func FuzzBacktest(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 200, 0, 9, 7, 7, 1, 250, 3}, int64(time.Minute), int64(4*time.Minute), int64(90*time.Second), int64(30*time.Minute), uint8(4), 10.0, int64(time.Minute), int64(2*time.Minute))
	f.Add([]byte{0, 0, 0, 255, 255, 255, 255, 127, 9, 9, 9, 9}, int64(time.Minute), int64(3*time.Minute), int64(0), int64(0), uint8(0), 0.0, int64(0), int64(0))
	f.Add([]byte{5, 50, 5, 50, 5, 50, 5, 50, 5, 50, 5, 50, 5, 50}, int64(time.Minute), int64(2*time.Minute), int64(time.Minute), int64(-time.Hour), uint8(1), math.NaN(), int64(-time.Minute), int64(time.Hour))
	f.Fuzz(func(t *testing.T, raw []byte, step, season, lead, span int64, method uint8, unit float64, startup, stabilization int64) {
		h := Series{Start: t0, Step: time.Duration(step)}
		for i := 0; i < len(raw) && len(h.Values) < 2048; i++ {
			h.Values = append(h.Values, float64(raw[i]))
		}
		if len(raw) > 8 {
			h.Values[0] = math.Float64frombits(uint64(raw[0])<<56 | uint64(raw[1])<<48 | uint64(raw[2])<<40 | uint64(raw[3])<<32 | uint64(raw[8]))
		}
		now := t0.Add(time.Duration(len(h.Values)) * time.Duration(step))
		req := BacktestRequest{Request: Request{Now: now, Lead: time.Duration(lead), Season: time.Duration(season), Method: Methods[int(method)%len(Methods)]},
			Span: time.Duration(span), Unit: unit, Startup: time.Duration(startup), Stabilization: time.Duration(stabilization)}
		b := BacktestOf(h, req)
		if !b.OK {
			if b.Reason == "" || b.PaysOff() {
				t.Fatalf("no backtest, reason %q, pays off %v", b.Reason, b.PaysOff())
			}
			return
		}
		const eps = 1e-6
		for _, s := range []Score{b.Reactive, b.Floor, b.Frontier} {
			if math.IsNaN(s.Cost) || math.IsInf(s.Cost, 0) || s.Cost < 0 || math.IsNaN(s.Short) || math.IsInf(s.Short, 0) || s.Short < 0 {
				t.Fatalf("score %+v", s)
			}
		}
		if b.Floor.Cost < b.Reactive.Cost-eps*(1+b.Reactive.Cost) || b.Floor.Short > b.Reactive.Short+eps*(1+b.Reactive.Short) {
			t.Fatalf("the floor took replicas away: reactive %+v, floor %+v", b.Reactive, b.Floor)
		}
		if b.Frontier.Short > b.Reactive.Short+eps*(1+b.Reactive.Short) {
			t.Fatalf("the frontier at a higher cost is shorter of pods than the target alone: %+v vs %+v", b.Frontier, b.Reactive)
		}
		if b.Forecasts > MaxBacktestPoints || b.Missed > b.Forecasts {
			t.Fatalf("%d forecasts, %d missed", b.Forecasts, b.Missed)
		}
	})
}

// A weekly history read minutes before now (the controller reads it every
// 5 minutes) is backtested up to its end, and the week's one ramp, which
// sits at the span's first steps when now is just before this week's,
// counts: the path replays the steps before the span.
func TestBacktestWeeklyRampAtTheSpansStart(t *testing.T) {
	ramp := time.Date(2026, 11, 27, 16, 35, 0, 0, time.UTC)
	for _, lead := range []time.Duration{time.Minute, 257 * time.Second, 403 * time.Second} {
		now := ramp.Add(-lead)
		h := Series{Start: now.Add(-5 * Weekly).Truncate(5 * time.Minute), Step: 5 * time.Minute}
		data := now.Truncate(time.Minute).Add(-(4*Weekly + 2*time.Hour))
		for at := h.Start; !at.After(now.Add(-time.Minute)); at = at.Add(h.Step) {
			d := (at.Sub(ramp)%Weekly + Weekly) % Weekly
			switch {
			case at.Before(data):
				h.Values = append(h.Values, math.NaN())
			case d < 2*time.Hour:
				h.Values = append(h.Values, 100)
			default:
				h.Values = append(h.Values, 20)
			}
		}
		b := BacktestOf(h, BacktestRequest{Request: Request{Now: now, Lead: lead, Season: Weekly, Method: LevelCorrected},
			Span: Weekly, Unit: 10, Startup: time.Minute, Stabilization: 5 * time.Minute})
		if !b.OK || b.Reactive.Short <= 0 || !b.PaysOff() {
			t.Errorf("lead %v: %s (reactive %+v, floor %+v)", lead, b.Summary(), b.Reactive, b.Floor)
		}
	}
}
