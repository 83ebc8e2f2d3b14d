package forecast

import (
	"fmt"
	"math"
	"time"
)

// Seasons a Request names.
const (
	Daily  = 24 * time.Hour
	Weekly = 7 * Daily
)

// Bounds and defaults.
const (
	// MaxPoints is how many of a history's last values are read at most:
	// 100,000 (69 days at one minute, 17 days at 15 s). Older values are
	// ignored.
	MaxPoints = 100_000
	// MaxSeasons bounds Request.Seasons; DefaultSeasons is its default.
	MaxSeasons     = 8
	DefaultSeasons = 4
	// DefaultWindow is the half-width of the window around the target time
	// read in each past season.
	DefaultWindow = 5 * time.Minute
	// DefaultLevel is the window of the recent level LevelCorrected
	// compares: the last 5 minutes of the history (and of Request.Latest),
	// or levelSteps of the history's steps when longer. On the replays of
	// real traffic (docs/benchmarks.md, "The level window") it followed the
	// day's own level on each ramp better than the hour used before.
	DefaultLevel = 5 * time.Minute
	// levelSteps is how many history steps the default level spans at
	// least: on a 5-minute history (a weekly season's in the controller) a
	// 5-minute window compares one or two values with one or two of each
	// past season, and bursts then set the ratio (docs/benchmarks.md, "The
	// history refresh": +12 % replica-hours on NASA against +4 %).
	levelSteps = 3
	// maxRatio bounds LevelCorrected's ratio to [1/maxRatio, maxRatio].
	maxRatio = 4
)

// Method is how the forecast is computed (see the package doc).
type Method string

// Methods.
const (
	SeasonalNaive  Method = "SeasonalNaive"
	LevelCorrected Method = "LevelCorrected"
	SeasonalMax    Method = "SeasonalMax"
	HoltWinters    Method = "HoltWinters"
	LevelPeak      Method = "LevelPeak"
)

// Methods lists every method, in the order of the package doc.
var Methods = []Method{SeasonalNaive, LevelCorrected, SeasonalMax, HoltWinters, LevelPeak}

// Reasons there is no forecast.
const (
	ReasonInvalid      = "InvalidRequest"
	ReasonShortHistory = "ShortHistory"
	ReasonNoSeasonData = "NoSeasonData"
)

// Series is a metric's recorded values on a regular grid: Values[i] was
// recorded at Start + i×Step; NaN (or any non-finite value) is a gap.
type Series struct {
	Start  time.Time
	Step   time.Duration
	Values []float64
}

// Request is what to forecast.
type Request struct {
	// Now is the time of the forecast: values recorded after it are not
	// read. The target time is Now + Lead.
	Now    time.Time
	Lead   time.Duration
	Season time.Duration
	Method Method
	// Seasons is how many past seasons are read (0: DefaultSeasons; at most
	// MaxSeasons). SeasonalNaive reads one.
	Seasons int
	// Window is the half-width of the window around the target time read in
	// each past season (0: DefaultWindow).
	Window time.Duration
	// Level is the window of LevelCorrected's recent level (0:
	// DefaultLevel, or 3 history steps when longer), ending at the history's last point (at Now at the
	// latest), or at Latest when that is newer: a history read a few
	// minutes before Now still has a level, and a current reading keeps it
	// current.
	Level time.Duration
	// Latest is the metric's value read after the history's last point and
	// at Now at the latest (the metrics API's current value, when the
	// history was read minutes ago), in the history's unit. Only
	// LevelCorrected's recent level reads it (see recentLevel). A zero At,
	// a non-finite Value, an At after Now or not after the history's last
	// point: no reading.
	Latest Sample
}

// Sample is one value of a metric and when it was recorded.
type Sample struct {
	At    time.Time
	Value float64
}

// Forecast is the outcome: Value when OK, else Reason and Message say why
// there is none.
type Forecast struct {
	OK    bool
	Value float64
	// Seasons is how many past seasons contributed.
	Seasons int
	// Reason is one of the Reason constants; Message explains it.
	Reason, Message string
}

// Of forecasts req from h.
func Of(h Series, req Request) Forecast {
	if err := validate(h, &req); err != nil {
		return none(ReasonInvalid, err.Error())
	}
	return of(grid(h, req.Now), req)
}

// of forecasts a validated req from g, the history up to req.Now.
func of(g view, req Request) Forecast {
	first := g.first()
	if first < 0 || g.time(first).After(req.Now.Add(-req.Season)) {
		span := time.Duration(0)
		if first >= 0 {
			span = req.Now.Sub(g.time(first))
		}
		return none(ReasonShortHistory, fmt.Sprintf("the history covers %v, less than one season (%v)", span, req.Season))
	}
	var f Forecast
	switch req.Method {
	case SeasonalNaive:
		f = seasonal(g, req, 1, mean, req.Window, req.Window, false, median)
	case LevelCorrected:
		f = seasonal(g, req, req.Seasons, mean, req.Window, req.Window, true, median)
	case SeasonalMax:
		f = seasonal(g, req, req.Seasons, peak, req.Window, req.Window, false, trimmedMax)
	case LevelPeak:
		f = seasonal(g, req, req.Seasons, peak, req.Lead, req.Window, true, median)
	case HoltWinters:
		f = holtWinters(g, req)
	}
	if f.OK && (math.IsNaN(f.Value) || math.IsInf(f.Value, 0)) {
		return none(ReasonNoSeasonData, "the past seasons' values overflow")
	}
	if f.OK && f.Value < 0 {
		f.Value = 0
	}
	return f
}

func none(reason, msg string) Forecast { return Forecast{Reason: reason, Message: msg} }

// validate checks req against h and fills its defaults.
func validate(h Series, req *Request) error {
	switch {
	case h.Step <= 0:
		return fmt.Errorf("history step %v must be positive", h.Step)
	case req.Season < 2*h.Step:
		return fmt.Errorf("season %v must hold at least two history steps of %v", req.Season, h.Step)
	case req.Season > MaxSeasons*Weekly:
		return fmt.Errorf("season %v exceeds %v", req.Season, MaxSeasons*Weekly)
	case req.Lead < 0 || req.Lead >= req.Season:
		return fmt.Errorf("lead %v must be in [0, season %v)", req.Lead, req.Season)
	case req.Seasons < 0 || req.Seasons > MaxSeasons:
		return fmt.Errorf("seasons %d must be in [0, %d]", req.Seasons, MaxSeasons)
	case req.Window < 0 || req.Window >= req.Season/2:
		return fmt.Errorf("window %v must be in [0, half the season)", req.Window)
	case req.Level < 0 || req.Level >= req.Season:
		return fmt.Errorf("level window %v must be in [0, season %v)", req.Level, req.Season)
	}
	switch req.Method {
	case SeasonalNaive, LevelCorrected, SeasonalMax, HoltWinters, LevelPeak:
	default:
		return fmt.Errorf("unknown method %q (one of %v)", req.Method, Methods)
	}
	if req.Seasons == 0 {
		req.Seasons = DefaultSeasons
	}
	if req.Window == 0 {
		req.Window = min(DefaultWindow, req.Season/4)
	}
	if req.Level == 0 {
		req.Level = min(max(DefaultLevel, levelSteps*h.Step), req.Season/2)
	}
	return nil
}

// view is the part of a history a forecast may read: at most MaxPoints
// values, none recorded after now.
type view struct {
	start  time.Time
	step   time.Duration
	values []float64
}

func grid(h Series, now time.Time) view {
	v := view{start: h.Start, step: h.Step, values: h.Values}
	if now.Before(h.Start) {
		v.values = nil
		return v
	}
	if last := int64(now.Sub(h.Start) / h.Step); last+1 < int64(len(v.values)) {
		v.values = v.values[:last+1]
	}
	if n := len(v.values); n > MaxPoints {
		v.start = v.start.Add(time.Duration(n-MaxPoints) * v.step)
		v.values = v.values[n-MaxPoints:]
	}
	return v
}

func (v view) time(i int) time.Time { return v.start.Add(time.Duration(i) * v.step) }

// first is the index of the first finite value, -1 when none.
func (v view) first() int {
	for i, x := range v.values {
		if finite(x) {
			return i
		}
	}
	return -1
}

// span returns the indexes of the values recorded within [from, to].
func (v view) span(from, to time.Time) (int, int) {
	lo := ceilDiv(from.Sub(v.start), v.step)
	hi := floorDiv(to.Sub(v.start), v.step)
	lo, hi = max(lo, 0), min(hi, int64(len(v.values))-1)
	if lo > hi {
		return 0, -1
	}
	return int(lo), int(hi)
}

// aggregate is mean or peak over the finite values in [from, to]; ok is
// false when there are none.
type aggregate func(v view, from, to time.Time) (float64, bool)

func mean(v view, from, to time.Time) (float64, bool) {
	lo, hi := v.span(from, to)
	sum, n := 0.0, 0
	for _, x := range v.values[lo : hi+1] {
		if finite(x) {
			sum += x
			n++
		}
	}
	return sum / float64(n), n > 0
}

func peak(v view, from, to time.Time) (float64, bool) {
	lo, hi := v.span(from, to)
	m, ok := math.Inf(-1), false
	for _, x := range v.values[lo : hi+1] {
		if finite(x) && x > m {
			m, ok = x, true
		}
	}
	return m, ok
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func floorDiv(d, step time.Duration) int64 {
	q := int64(d / step)
	if d%step != 0 && d < 0 {
		q--
	}
	return q
}

func ceilDiv(d, step time.Duration) int64 {
	q := int64(d / step)
	if d%step != 0 && d > 0 {
		q++
	}
	return q
}
