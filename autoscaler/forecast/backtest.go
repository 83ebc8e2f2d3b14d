package forecast

import (
	"fmt"
	"math"
	"time"
)

// A backtest replays a forecast over the last days of its own history and
// scores the floor it would have set against the reactive path, so that a
// forecast is applied only where it has paid off (see BacktestRequest and
// Backtest.PaysOff).

// Backtest bounds and the pay-off rule.
const (
	// MaxBacktestPoints bounds how many forecasts one backtest makes: the
	// span is sampled at least every span/MaxBacktestPoints.
	MaxBacktestPoints = 12_000
	// PayOffRatio is the most the floor may leave short, as a share of what
	// the reactive path would leave short at the same cost (its target
	// lowered until it runs as many replicas), for the floor to pay off.
	PayOffRatio = 0.9
	// PayOffExtra is the most the floor may add to the reactive path's
	// replica-hours for it to pay off.
	PayOffExtra = 0.05
)

// BacktestRequest is a backtest of the forecast Request (its Now is the end
// of the backtest; Latest is not read: each replayed forecast reads the
// history up to its own time).
type BacktestRequest struct {
	Request
	// Span is how far back from Now forecasts are replayed (0: one
	// season). At least one season of it must have a season of history
	// before it.
	Span time.Duration
	// Unit is the load one pod serves at the metric's target, in the
	// history's unit: need, floor and reactive path are whole pods,
	// ceil(load / Unit). 0 scores the load itself (a Value target, whose
	// replica count is proportional to it).
	Unit float64
	// Startup is how long a new pod takes to become ready;
	// Stabilization the downscale stabilization window (a scale-down
	// follows the highest recommendation within it).
	Startup, Stabilization time.Duration
}

// Score is one path's cost and shortfall over a backtest, in pod-hours
// (load-hours when Unit is 0).
type Score struct {
	// Cost is the replicas asked for, summed over time; Short the need
	// the ready replicas did not meet.
	Cost, Short float64
}

// Backtest is the outcome: the reactive path (the metric's target read at
// each step), the same with the forecast's floor, and the reactive path at
// the floor's cost (the frontier: a lower target spending the same
// replica-hours). Reason and Message say why a backtest is not OK.
type Backtest struct {
	OK              bool
	Reason, Message string
	// From and To bound the scored span; Forecasts is how many forecasts
	// were made (one a history step), Missed how many of them had none.
	From, To          time.Time
	Forecasts, Missed int
	Reactive, Floor   Score
	Frontier          Score
}

// ShortRatio is the floor's shortfall over the frontier's: below 1 the
// floor met more of the need than a lower target spending the same
// replica-hours would have. NaN when the frontier was never short.
func (b Backtest) ShortRatio() float64 {
	if b.Frontier.Short <= 0 {
		return math.NaN()
	}
	return b.Floor.Short / b.Frontier.Short
}

// ExtraCost is the floor's replica-hours over the reactive path's, minus 1.
func (b Backtest) ExtraCost() float64 {
	if b.Reactive.Cost <= 0 {
		return 0
	}
	return b.Floor.Cost/b.Reactive.Cost - 1
}

// PaysOff reports whether the floor paid off over the backtest: the
// reactive path was short, the floor left at most PayOffRatio of what the
// frontier left short, and it added at most PayOffExtra replica-hours.
func (b Backtest) PaysOff() bool {
	r := b.ShortRatio()
	return b.OK && !math.IsNaN(r) && r <= PayOffRatio && b.ExtraCost() <= PayOffExtra
}

// Summary describes the outcome in a sentence's words.
func (b Backtest) Summary() string {
	if !b.OK {
		return "no backtest: " + b.Message
	}
	r := b.ShortRatio()
	ratio := "the reactive path was never short"
	if !math.IsNaN(r) {
		ratio = fmt.Sprintf("short %.2f× the reactive path at equal cost", r)
	}
	return fmt.Sprintf("backtest over %v: %s, %+.1f%% replica-hours (%d forecasts)",
		b.To.Sub(b.From).Round(time.Minute), ratio, 100*b.ExtraCost(), b.Forecasts)
}

// BacktestOf replays req's forecast over the last req.Span of h, one
// forecast per history step, and scores the three paths (Backtest). Cost:
// O(forecasts × one forecast), the forecasts bounded by MaxBacktestPoints.
func BacktestOf(h Series, req BacktestRequest) Backtest {
	r := req.Request
	if err := validate(h, &r); err != nil {
		return Backtest{Reason: ReasonInvalid, Message: err.Error()}
	}
	span := req.Span
	if span == 0 {
		span = r.Season
	}
	switch {
	case span < 0 || span > MaxSeasons*r.Season:
		return Backtest{Reason: ReasonInvalid, Message: fmt.Sprintf("backtest span %v must be in [0, %d seasons]", span, MaxSeasons)}
	case req.Unit < 0 || !finite(req.Unit):
		return Backtest{Reason: ReasonInvalid, Message: fmt.Sprintf("unit %v must be a non-negative number", req.Unit)}
	case req.Startup < 0 || req.Startup >= r.Season || req.Stabilization < 0 || req.Stabilization >= r.Season:
		return Backtest{Reason: ReasonInvalid, Message: fmt.Sprintf("start-up %v and stabilization %v must be in [0, season %v)", req.Startup, req.Stabilization, r.Season)}
	}
	g := grid(h, r.Now)
	first := g.first()
	if first < 0 {
		return Backtest{Reason: ReasonShortHistory, Message: "the history holds no value"}
	}
	// Scored steps: the span up to the history's last point (at Now at
	// the latest: a history read minutes ago is backtested up to its end),
	// each with a season of history before it.
	end := g.time(len(g.values) - 1)
	lo, hi := g.span(maxTime(end.Add(-span+1), g.time(first).Add(r.Season)), end)
	if hi-lo+1 < int(r.Season/g.step) {
		covered := time.Duration(max(0, hi-lo+1)) * g.step
		return Backtest{Reason: ReasonShortHistory, Message: fmt.Sprintf("the history leaves %v to replay after its first season, less than one season (%v): a backtest needs two seasons of history", covered, r.Season)}
	}
	ready, hold := int(ceilDiv(req.Startup, g.step)), int(req.Stabilization/g.step)
	// The paths start ready + hold steps before the scored ones (replayed,
	// not scored), so that the first scored step has the replicas asked
	// and made ready before it: an event at the span's first step counts.
	from := max(0, lo-ready-hold)
	stride := max(1, (hi-from+1+MaxBacktestPoints-1)/MaxBacktestPoints)
	n := hi - from + 1
	load := g.values[from : hi+1]
	floor := make([]float64, n)
	out := Backtest{OK: true, From: g.time(lo), To: g.time(hi)}
	for i := 0; i < n; i += stride {
		fr := r
		fr.Now = g.time(from + i)
		sub := view{start: g.start, step: g.step, values: g.values[:from+i+1]}
		f := of(sub, fr)
		v := 0.0
		if f.OK {
			v = pods(f.Value, req.Unit, 1)
		}
		if from+i >= lo {
			out.Forecasts++
			if !f.OK {
				out.Missed++
			}
		}
		for j := i; j < min(n, i+stride); j++ {
			floor[j] = v
		}
	}
	p := paths{load: load, floor: floor, unit: req.Unit, hours: g.step.Hours(),
		ready: ready, hold: hold, scored: lo - from,
		rec: make([]float64, n), asked: make([]float64, n)}
	out.Reactive = p.score(1, false)
	out.Floor = p.score(1, true)
	out.Frontier = p.frontier(out.Reactive, out.Floor.Cost)
	return out
}

// paths scores the reactive path and the floored one over a backtest's
// steps: at step i the recommendation is the need read then (the floor's
// at least, when floored), the replicas asked the highest recommendation
// within hold steps, the ready replicas the fewest asked within ready
// steps (a pod asked for is ready ready steps later; one removed is gone at
// once), and the shortfall the need the ready replicas do not meet.
type paths struct {
	load, floor []float64
	unit, hours float64
	ready, hold int
	// scored is the first step scored (the steps before it only set the
	// replicas asked and ready).
	scored int
	// rec and asked are score's buffers (len(load) each).
	rec, asked []float64
}

// score is the path at the target scaled by k (k < 1: a lower target, more
// replicas), with the floor when floored. A step without a value holds the
// last recommendation and is not scored.
func (p paths) score(k float64, floored bool) Score {
	rec, asked := p.rec, p.asked
	var s Score
	last := 0.0
	for i, x := range p.load {
		if finite(x) {
			last = pods(x, p.unit, k)
		}
		rec[i] = last
		if floored {
			rec[i] = math.Max(rec[i], p.floor[i])
		}
		a := rec[i]
		for j := max(0, i-p.hold); j < i; j++ {
			a = math.Max(a, rec[j])
		}
		asked[i] = a
		ready := a
		for j := max(0, i-p.ready); j < i; j++ {
			ready = math.Min(ready, asked[j])
		}
		if i < p.scored {
			continue
		}
		s.Cost += a * p.hours
		if finite(x) {
			s.Short += math.Max(0, pods(x, p.unit, 1)-ready) * p.hours
		}
	}
	return s
}

// frontier is the reactive path at a lower target that costs what the
// floor costs (bisection on the target's scale, the shortfall interpolated
// between the last two scales), or the reactive path when the floor added
// nothing.
func (p paths) frontier(reactive Score, cost float64) Score {
	if cost <= reactive.Cost {
		return reactive
	}
	hiK, hiS := 1.0, reactive // cheaper than cost
	loK := 1.0
	loS := reactive
	for range 20 { // a cost above the floor's: k halves each round
		loK /= 2
		loS = p.score(loK, false)
		if loS.Cost >= cost {
			break
		}
		hiK, hiS = loK, loS
	}
	if loS.Cost < cost {
		return loS
	}
	for range 30 {
		mid := (loK + hiK) / 2
		s := p.score(mid, false)
		if s.Cost >= cost {
			loK, loS = mid, s
		} else {
			hiK, hiS = mid, s
		}
		if loS.Cost-hiS.Cost <= 1e-9*cost {
			break
		}
	}
	w := 0.0
	if d := loS.Cost - hiS.Cost; d > 0 {
		w = (cost - hiS.Cost) / d
	}
	return Score{Cost: cost, Short: hiS.Short + w*(loS.Short-hiS.Short)}
}

// pods is the replicas load asks for at the target scaled by k: whole pods
// of unit, or the load over k when unit is 0.
func pods(load, unit, k float64) float64 {
	if load <= 0 {
		return 0
	}
	if unit == 0 {
		return load / k
	}
	return math.Ceil(load/(unit*k) - 1e-9)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
