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
		edit   func(History) History
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
func scaleFrom(at time.Time, k float64) func(History) History {
	return func(h History) History {
		for i := int(at.Sub(t0) / time.Minute); i < len(h.Values); i++ {
			h.Values[i] *= k
		}
		return h
	}
}

// readAt edits h, then drops its values after at: a history read at at.
func readAt(at time.Time, edit func(History)) func(History) History {
	return func(h History) History {
		edit(h)
		h.Values = h.Values[:int(at.Sub(t0)/time.Minute)+1]
		return h
	}
}

// blankFrom sets the values from at on to NaN.
func blankFrom(at time.Time) func(History) History {
	return func(h History) History {
		for i := int(at.Sub(t0) / time.Minute); i < len(h.Values); i++ {
			h.Values[i] = math.NaN()
		}
		return h
	}
}
