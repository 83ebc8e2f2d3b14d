package forecast

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// daily is 100 + 50·sin over the day, at one-minute steps, for days days.
func daily(days int) Series {
	h := Series{Start: t0, Step: time.Minute, Values: make([]float64, days*1440)}
	for i := range h.Values {
		h.Values[i] = load(t0.Add(time.Duration(i) * time.Minute))
	}
	return h
}

func load(at time.Time) float64 {
	phase := float64(at.Sub(t0)%Daily) / float64(Daily)
	return 100 + 50*math.Sin(2*math.Pi*phase)
}

func TestForecastPeriodic(t *testing.T) {
	h := daily(5)
	now := t0.Add(4*Daily + 3*time.Hour)
	lead := 2 * time.Minute
	want := load(now.Add(lead))
	for _, m := range Methods {
		t.Run(string(m), func(t *testing.T) {
			f := Of(h, Request{Now: now, Lead: lead, Season: Daily, Method: m})
			if !f.OK {
				t.Fatalf("no forecast: %s %s", f.Reason, f.Message)
			}
			// SeasonalMax reads the peak of a ±5 min window: above the value.
			tol := 0.02 * want
			if m == SeasonalMax {
				tol = load(now.Add(lead+5*time.Minute)) - want + 0.01
			}
			if math.Abs(f.Value-want) > tol {
				t.Errorf("forecast %.2f, want %.2f ± %.2f", f.Value, want, tol)
			}
		})
	}
}

func TestForecastRobustness(t *testing.T) {
	now := t0.Add(4*Daily + 12*time.Hour)
	lead := 90 * time.Second
	want := load(now.Add(lead))
	cases := []struct {
		name   string
		edit   func(h Series)
		method Method
		// within is the accepted distance from want, as a fraction.
		within float64
	}{
		{"outage at zero a season ago", zeroDay(3), SeasonalMax, 0.05},
		{"outage at zero a season ago, level corrected", zeroDay(3), LevelCorrected, 0.05},
		{"one-off spike two seasons ago", spikeDay(2), SeasonalMax, 0.05},
		{"one-off spike, level corrected", spikeDay(2), LevelCorrected, 0.05},
		{"load doubled today", double(now), LevelCorrected, 0.05},
		{"gaps in the history", holes, SeasonalMax, 0.05},
		{"gaps in the history, level corrected", holes, LevelCorrected, 0.05},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := daily(5)
			c.edit(h)
			f := Of(h, Request{Now: now, Lead: lead, Season: Daily, Method: c.method})
			w := want
			if c.name == "load doubled today" {
				w = 2 * want
			}
			if !f.OK || math.Abs(f.Value-w) > c.within*w {
				t.Errorf("forecast %+v, want %.1f ± %.0f%%", f, w, 100*c.within)
			}
		})
	}
}

// zeroDay sets day d to zero.
func zeroDay(d int) func(Series) {
	return func(h Series) {
		for i := d * 1440; i < (d+1)*1440; i++ {
			h.Values[i] = 0
		}
	}
}

// spikeDay multiplies day d by 20.
func spikeDay(d int) func(Series) {
	return func(h Series) {
		for i := d * 1440; i < (d+1)*1440; i++ {
			h.Values[i] *= 20
		}
	}
}

// double doubles the load from the start of now's day.
func double(now time.Time) func(Series) {
	return func(h Series) {
		for i := int(now.Truncate(Daily).Sub(t0) / time.Minute); i < len(h.Values); i++ {
			h.Values[i] *= 2
		}
	}
}

// holes blanks every third minute.
func holes(h Series) {
	for i := 0; i < len(h.Values); i += 3 {
		h.Values[i] = math.NaN()
	}
}

func TestForecastNone(t *testing.T) {
	now := t0.Add(4*Daily + 12*time.Hour)
	cases := []struct {
		name   string
		h      Series
		req    Request
		reason string
		says   string
	}{
		{"less than a season", daily(1), Request{Now: t0.Add(20 * time.Hour), Lead: time.Minute, Season: Daily, Method: SeasonalMax}, ReasonShortHistory, "less than one season"},
		{"no history", Series{Start: t0, Step: time.Minute}, Request{Now: now, Season: Daily, Method: HoltWinters}, ReasonShortHistory, "0s"},
		{"a week asked of 5 days", daily(5), Request{Now: now, Season: Weekly, Method: LevelCorrected}, ReasonShortHistory, "168h"},
		{"the windows are blank", blank(daily(5), 12*time.Hour, 20*time.Minute), Request{Now: now, Lead: time.Minute, Season: Daily, Method: SeasonalNaive}, ReasonNoSeasonData, "no sample"},
		{"unknown method", daily(5), Request{Now: now, Season: Daily, Method: "Prophet"}, ReasonInvalid, `unknown method "Prophet"`},
		{"lead of a season", daily(5), Request{Now: now, Lead: Daily, Season: Daily, Method: SeasonalMax}, ReasonInvalid, "lead 24h0m0s"},
		{"too many seasons", daily(5), Request{Now: now, Season: Daily, Seasons: 9, Method: SeasonalMax}, ReasonInvalid, "seasons 9"},
		{"zero step", Series{Start: t0, Values: []float64{1}}, Request{Now: now, Season: Daily, Method: SeasonalMax}, ReasonInvalid, "step"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Of(c.h, c.req)
			if f.OK || f.Reason != c.reason || !strings.Contains(f.Message, c.says) {
				t.Errorf("got %+v, want reason %s saying %q", f, c.reason, c.says)
			}
		})
	}
}

// blank sets every day's values within ±w of the time of day at to NaN.
func blank(h Series, at, w time.Duration) Series {
	for i := range h.Values {
		tod := time.Duration(i)*h.Step%Daily - at
		if tod >= -w && tod <= w {
			h.Values[i] = math.NaN()
		}
	}
	return h
}

func TestForecastIgnoresTheFuture(t *testing.T) {
	h := daily(5)
	now := t0.Add(3*Daily + 6*time.Hour)
	for i := int(now.Sub(t0)/time.Minute) + 1; i < len(h.Values); i++ {
		h.Values[i] = 1e9
	}
	for _, m := range Methods {
		f := Of(h, Request{Now: now, Lead: 2 * time.Minute, Season: Daily, Method: m})
		if !f.OK || f.Value > 200 {
			t.Errorf("%s: %+v read values after now", m, f)
		}
	}
}

func TestForecastLongHistoryIsCapped(t *testing.T) {
	h := daily(90) // 129,600 values, more than MaxPoints
	now := t0.Add(90*Daily - time.Minute)
	for _, m := range Methods {
		f := Of(h, Request{Now: now, Lead: time.Minute, Season: Daily, Method: m})
		if want := load(now.Add(time.Minute)); !f.OK || math.Abs(f.Value-want) > 0.05*want {
			t.Errorf("%s: %+v, want about %.1f", m, f, want)
		}
	}
	if g := grid(h, now); len(g.values) != MaxPoints {
		t.Errorf("read %d values, want the cap %d", len(g.values), MaxPoints)
	}
}

func FuzzForecast(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 200, 0, 9}, int64(time.Minute), int64(Daily), int64(time.Minute), int64(Daily), uint8(2), uint8(3), int64(0), int64(0), 0.0)
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 127}, int64(time.Hour), int64(Weekly), int64(0), int64(-Daily), uint8(3), uint8(8), int64(time.Hour), int64(-time.Minute), math.MaxFloat64)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 9, 9}, int64(time.Minute), int64(2*time.Minute), int64(time.Minute), int64(10*time.Minute), uint8(1), uint8(1), int64(time.Minute), int64(10*time.Minute), -5.0)
	f.Fuzz(func(t *testing.T, raw []byte, step, season, lead, now int64, method, seasons uint8, level, latestAt int64, latest float64) {
		h := Series{Start: t0, Step: time.Duration(step)}
		for i := 0; i+8 <= len(raw) && len(h.Values) < 4096; i += 8 {
			bits := uint64(0)
			for _, b := range raw[i : i+8] {
				bits = bits<<8 | uint64(b)
			}
			h.Values = append(h.Values, math.Float64frombits(bits))
		}
		for i := 0; i < len(raw) && len(h.Values) < 4096; i++ {
			h.Values = append(h.Values, float64(raw[i]))
		}
		req := Request{Now: t0.Add(time.Duration(now)), Lead: time.Duration(lead), Season: time.Duration(season),
			Method: Methods[int(method)%len(Methods)], Seasons: int(seasons % (MaxSeasons + 2)), Level: time.Duration(level),
			Latest: Sample{At: t0.Add(time.Duration(latestAt)), Value: latest}}
		out := Of(h, req)
		if out.OK && (math.IsNaN(out.Value) || math.IsInf(out.Value, 0) || out.Value < 0) {
			t.Fatalf("forecast %v of %+v", out.Value, req)
		}
		if !out.OK && out.Reason == "" {
			t.Fatalf("no forecast and no reason: %+v", out)
		}
		if out.Seasons > MaxSeasons {
			t.Fatalf("%d seasons read", out.Seasons)
		}
	})
}
