package forecast

import (
	"math"
	"testing"
	"time"
)

// LevelCorrected follows the last minutes of the history: a rise today
// that the past seasons did not have, and a history read some minutes
// before Now (the controller refreshes it every few minutes).
func TestForecastLevelFollowsTheLastMinutes(t *testing.T) {
	now := t0.Add(4*Daily + 12*time.Hour)
	lead := 2 * time.Minute
	want := load(now.Add(lead))
	cases := []struct {
		name string
		// edit changes the history; factor is the load at now+lead over
		// the past seasons'.
		edit   func(Series) Series
		factor float64
	}{
		{"a rise of half 20 minutes ago", scaleFrom(now.Add(-20*time.Minute), 1.5), 1.5},
		{"a fall by half 20 minutes ago", scaleFrom(now.Add(-20*time.Minute), 0.5), 0.5},
		{"load doubled today, history read 4 minutes ago", readAt(now.Add(-4*time.Minute), double(now)), 2},
		{"load doubled today, history read 30 minutes ago", readAt(now.Add(-30*time.Minute), double(now)), 2},
		{"no level: the last minutes are a gap", blankFrom(now.Add(-10 * time.Minute)), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.edit(daily(5))
			f := Of(h, Request{Now: now, Lead: lead, Season: Daily, Method: LevelCorrected})
			if w := c.factor * want; !f.OK || math.Abs(f.Value-w) > 0.05*w {
				t.Errorf("forecast %+v, want %.1f ± 5%%", f, w)
			}
		})
	}
	// An hour's level, the earlier default, lags the rise: 20 minutes of
	// 1.5 among 60 give 1.17.
	h := scaleFrom(now.Add(-20*time.Minute), 1.5)(daily(5))
	f := Of(h, Request{Now: now, Lead: lead, Season: Daily, Method: LevelCorrected, Level: time.Hour})
	if w := 1.5 * want; !f.OK || f.Value > 0.85*w {
		t.Errorf("a one-hour level: forecast %+v, want well under %.1f", f, w)
	}
}

// scaleFrom multiplies the load from at on by k.
func scaleFrom(at time.Time, k float64) func(Series) Series {
	return func(h Series) Series {
		for i := int(at.Sub(t0) / time.Minute); i < len(h.Values); i++ {
			h.Values[i] *= k
		}
		return h
	}
}

// readAt edits h, then drops its values after at: a history read at at.
func readAt(at time.Time, edit func(Series)) func(Series) Series {
	return func(h Series) Series {
		edit(h)
		h.Values = h.Values[:int(at.Sub(t0)/time.Minute)+1]
		return h
	}
}

// blankFrom sets the values from at on to NaN.
func blankFrom(at time.Time) func(Series) Series {
	return func(h Series) Series {
		for i := int(at.Sub(t0) / time.Minute); i < len(h.Values); i++ {
			h.Values[i] = math.NaN()
		}
		return h
	}
}

// A reading newer than the history keeps the level current: on a ramp that
// began today, a history read 4 minutes ago with the reading at Now
// forecasts as the history read up to Now does; without the reading, the
// level lags by those minutes.
func TestForecastLevelReadsTheLatestValue(t *testing.T) {
	now := t0.Add(4*Daily + 12*time.Hour)
	lead := 2 * time.Minute
	// Today's load grows from ×1 at now-30m to ×2 at now (and on).
	ramp := func(h Series) Series {
		from := now.Add(-30 * time.Minute)
		for i := int(from.Sub(t0) / time.Minute); i < len(h.Values); i++ {
			k := min(1+float64(i-int(from.Sub(t0)/time.Minute))/30, 2)
			h.Values[i] *= k
		}
		return h
	}
	full := ramp(daily(5))
	nowAt := int(now.Sub(t0) / time.Minute)
	latest := Sample{At: now, Value: full.Values[nowAt]}
	req := Request{Now: now, Lead: lead, Season: Daily, Method: LevelCorrected}
	fresh := Of(full, req)
	stale := full
	stale.Values = full.Values[:nowAt-4+1]
	withLatest := req
	withLatest.Latest = latest
	got, lagging := Of(stale, withLatest), Of(stale, req)
	if !fresh.OK || !got.OK || !lagging.OK {
		t.Fatalf("forecasts %+v %+v %+v", fresh, got, lagging)
	}
	if math.Abs(got.Value-fresh.Value) > 0.01*fresh.Value {
		t.Errorf("history 4 minutes old with the reading at now: %.2f, want %.2f ± 1%% (the history read up to now)", got.Value, fresh.Value)
	}
	if lagging.Value > 0.95*fresh.Value {
		t.Errorf("without the reading: %.2f, want the lagging level well under %.2f", lagging.Value, fresh.Value)
	}

	// A reading the forecast may not use changes nothing.
	for name, l := range map[string]Sample{
		"no time":                  {Value: 1e6},
		"after now":                {At: now.Add(time.Second), Value: 1e6},
		"not after the history":    {At: now.Add(-4 * time.Minute), Value: 1e6},
		"before the history's end": {At: now.Add(-10 * time.Minute), Value: 1e6},
		"not a number":             {At: now, Value: math.NaN()},
		"infinite":                 {At: now, Value: math.Inf(1)},
	} {
		r := req
		r.Latest = l
		if f := Of(stale, r); f != lagging {
			t.Errorf("%s: %+v, want %+v as without it", name, f, lagging)
		}
	}
}

// recentLevel's closed form equals the mean over the history extended, at
// each grid time between its last point and the reading, with the line
// between the two.
func TestRecentLevelLine(t *testing.T) {
	vals := []float64{3, math.NaN(), 7, 2, 9, 4}
	step := 10 * time.Second
	h := Series{Start: t0, Step: step, Values: vals}
	last := t0.Add(5 * step)
	for _, c := range []struct {
		after, level time.Duration
	}{
		{1 * time.Second, time.Minute}, {10 * time.Second, time.Minute}, {25 * time.Second, time.Minute},
		{40 * time.Second, 30 * time.Second}, {2 * time.Minute, time.Minute}, {95 * time.Second, 2 * time.Minute},
	} {
		at := last.Add(c.after)
		latest := Sample{At: at, Value: 20}
		got, end, ok := recentLevel(grid(h, at), Request{Now: at, Level: c.level, Latest: latest})
		sum, n := 0.0, 0
		from := at.Add(-c.level)
		for i, x := range vals {
			if ti := t0.Add(time.Duration(i) * step); !ti.Before(from) && finite(x) {
				sum, n = sum+x, n+1
			}
		}
		for ti := last.Add(step); ti.Before(at); ti = ti.Add(step) {
			if !ti.Before(from) {
				sum += 4 + (20-4)*float64(ti.Sub(last))/float64(at.Sub(last))
				n++
			}
		}
		want := (sum + 20) / float64(n+1)
		if !ok || !end.Equal(at) || math.Abs(got-want) > 1e-9 {
			t.Errorf("reading %v after the last point, level %v: %v at %v (ok %v), want %v at %v", c.after, c.level, got, end, ok, want, at)
		}
	}
}

// On a coarse history the default level spans at least 3 of its steps, so
// it compares more than the last one or two values: at a 10-minute step,
// the last 30 minutes.
func TestForecastLevelCoarseHistory(t *testing.T) {
	now := t0.Add(4*Daily + 12*time.Hour)
	lead := 10 * time.Minute
	fine := scaleFrom(now.Add(-25*time.Minute), 1.5)(daily(5))
	coarse := Series{Start: t0, Step: 10 * time.Minute}
	for i := 0; i < len(fine.Values); i += 10 {
		coarse.Values = append(coarse.Values, fine.Values[i])
	}
	// The last 30 minutes hold 4 values, the last 3 of them at 1.5: the
	// level is 1.375 times the past days'; over 5 minutes it would be 1.5.
	f := Of(coarse, Request{Now: now, Lead: lead, Season: Daily, Method: LevelCorrected})
	if w := 1.375 * load(now.Add(lead)); !f.OK || math.Abs(f.Value-w) > 0.02*w {
		t.Errorf("forecast %+v, want %.1f ± 2%%", f, w)
	}
}
