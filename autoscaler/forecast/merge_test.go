package forecast

import (
	"math"
	"slices"
	"testing"
	"time"
)

// series is the history from minute from to minute to of a clock, each
// value its minute (NaN where missing).
func series(t0 time.Time, from, to int, missing ...int) Series {
	h := Series{Start: t0.Add(time.Duration(from) * time.Minute), Step: time.Minute}
	for m := from; m <= to; m++ {
		v := float64(m)
		if slices.Contains(missing, m) {
			v = math.NaN()
		}
		h.Values = append(h.Values, v)
	}
	return h
}

func sameSeries(a, b Series) bool {
	return a.Start.Equal(b.Start) && a.Step == b.Step && slices.EqualFunc(a.Values, b.Values, func(x, y float64) bool {
		return x == y || (math.IsNaN(x) && math.IsNaN(y))
	})
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	keep := 100 * time.Minute
	for _, tc := range []struct {
		name      string
		h, recent Series
		want      Series
		ok        bool
	}{
		// Read at minute 100 (0..100), then at 105 the last 15 minutes:
		// the same as a whole read at 105, 5..105.
		{"the minutes since", series(t0, 0, 100), series(t0, 90, 105), series(t0, 5, 105), true},
		// The overlap's values are the recent read's (a late sample
		// arrived, a missing one is missing).
		{"recent wins the overlap", series(t0, 0, 100, 95), series(t0, 90, 105, 97), series(t0, 5, 105, 97), true},
		{"recent right after the end", series(t0, 0, 100), series(t0, 101, 103), series(t0, 3, 103), true},
		{"a shorter history is kept whole", series(t0, 50, 100), series(t0, 95, 110), series(t0, 50, 110), true},
		{"recent longer than h", series(t0, 50, 100), series(t0, 0, 105), series(t0, 5, 105), true},
		{"a gap", series(t0, 0, 100), series(t0, 102, 110), Series{}, false},
		{"off the grid", series(t0, 0, 100), Series{Start: t0.Add(95*time.Minute + 30*time.Second), Step: time.Minute, Values: []float64{1}}, Series{}, false},
		{"another step", series(t0, 0, 100), Series{Start: t0.Add(95 * time.Minute), Step: 5 * time.Minute, Values: []float64{1}}, Series{}, false},
		{"empty recent", series(t0, 0, 100), Series{Start: t0, Step: time.Minute}, Series{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.h.Merge(tc.recent, keep)
			if ok != tc.ok || (ok && !sameSeries(got, tc.want)) {
				t.Errorf("Merge = %v %v … (%d values), %v; want %v %v … (%d values), %v", got.Start, got.Values[:min(3, len(got.Values))], len(got.Values), ok, tc.want.Start, tc.want.Values[:min(3, len(tc.want.Values))], len(tc.want.Values), tc.ok)
			}
		})
	}
}
