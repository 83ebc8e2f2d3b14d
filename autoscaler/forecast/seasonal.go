package forecast

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// seasonal reads the window [target - before, target + after] in each of
// the last k seasons with agg, optionally scales each by the recent level
// (recentLevel) over that season's level over the same window, and combines
// the seasons' values.
func seasonal(g view, req Request, k int, agg aggregate, before, after time.Duration, level bool, combine func([]float64) float64) Forecast {
	target := req.Now.Add(req.Lead)
	var recent float64
	var end time.Time
	recentOK := false
	if level {
		recent, end, recentOK = recentLevel(g, req)
	}
	var vals [MaxSeasons]float64
	n := 0
	for s := 1; s <= k; s++ {
		back := time.Duration(s) * req.Season
		at := target.Add(-back)
		// The window ends at Now a season back at most: values recorded
		// after Now are not known.
		to := at.Add(after)
		if limit := req.Now; to.After(limit) {
			to = limit
		}
		v, ok := agg(g, at.Add(-before), to)
		if !ok {
			continue
		}
		if level && recentOK {
			if then, ok := mean(g, end.Add(-back-req.Level), end.Add(-back)); ok {
				v *= ratio(recent, then)
			}
		}
		vals[n] = v
		n++
	}
	if n == 0 {
		return none(ReasonNoSeasonData, fmt.Sprintf("no sample within %v of the target time in the last %d season(s)", req.Window, k))
	}
	return Forecast{OK: true, Value: combine(vals[:n]), Seasons: n}
}

// recentLevel is LevelCorrected's recent level and the time its window
// ends. The window ends at the history's last point (at Now at the latest):
// a history read a few minutes ago (the controller reads it every few
// minutes) compares its own last minutes, not an empty window. When
// req.Latest is newer than that point, the window ends at the reading
// instead, and the level is the mean of the history's values in it, the
// grid times between the history's last point and the reading valued on the
// line between the two, and the reading: the level of right now, as a
// history read up to now would give it on a ramp.
func recentLevel(g view, req Request) (float64, time.Time, bool) {
	n := len(g.values)
	end := req.Now
	if n > 0 && g.time(n-1).Before(end) {
		end = g.time(n - 1)
	}
	l := req.Latest
	if l.At.IsZero() || !finite(l.Value) || l.At.After(req.Now) || (n > 0 && !l.At.After(g.time(n-1))) {
		m, ok := mean(g, end.Add(-req.Level), end)
		return m, end, ok
	}
	from := l.At.Add(-req.Level)
	lo, hi := g.span(from, l.At)
	sum, count := l.Value, 1.0
	for _, x := range g.values[lo : hi+1] {
		if finite(x) {
			sum += x
			count++
		}
	}
	if n > 0 && finite(g.values[n-1]) {
		// Grid times last + j×step, j in [j0, j1]: after the last point,
		// before the reading, within the window. The line's values sum in
		// closed form, so a long gap costs no loop.
		last, a := g.time(n-1), g.values[n-1]
		gap := l.At.Sub(last)
		j0 := max(1, ceilDiv(from.Sub(last), g.step))
		j1 := ceilDiv(gap, g.step) - 1
		if j1 >= j0 {
			k := float64(j1 - j0 + 1)
			slope := (l.Value - a) * float64(g.step) / float64(gap)
			sum += k*a + slope*float64(j0+j1)*k/2
			count += k
		}
	}
	return sum / count, l.At, true
}

// ratio is now over then, bounded to [1/maxRatio, maxRatio]; 1 when either
// is not positive (an outage then, or nothing now).
func ratio(now, then float64) float64 {
	if now <= 0 || then <= 0 {
		return 1
	}
	return math.Min(maxRatio, math.Max(1.0/maxRatio, now/then))
}

// median of vs (reordered).
func median(vs []float64) float64 {
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return vs[n/2-1]/2 + vs[n/2]/2
}

// trimmedMax is the second largest of three or more values, the smaller of
// two, the one of one (vs reordered): a high aggregate no single season
// decides.
func trimmedMax(vs []float64) float64 {
	slices.Sort(vs)
	switch n := len(vs); {
	case n >= 3:
		return vs[n-2]
	default:
		return vs[0]
	}
}
