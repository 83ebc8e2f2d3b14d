package forecast

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// seasonal reads the window around the target time in each of the last k
// seasons with agg, optionally scales each by the recent level (the last
// req.Level of the history) over that season's level at the same time, and
// combines the seasons' values.
func seasonal(g view, req Request, k int, agg aggregate, level bool, combine func([]float64) float64) Forecast {
	target := req.Now.Add(req.Lead)
	recent, recentOK := 0.0, false
	// The level ends at the history's last point: a history read a few
	// minutes ago (the controller refreshes it every few minutes) compares
	// its own last minutes, not an empty window.
	end := req.Now
	if n := len(g.values); n > 0 && g.time(n-1).Before(end) {
		end = g.time(n - 1)
	}
	if level {
		recent, recentOK = mean(g, end.Add(-req.Level), end)
	}
	var vals [MaxSeasons]float64
	n := 0
	for s := 1; s <= k; s++ {
		back := time.Duration(s) * req.Season
		at := target.Add(-back)
		// The window ends at Now a season back at most: values recorded
		// after Now are not known.
		to := at.Add(req.Window)
		if limit := req.Now; to.After(limit) {
			to = limit
		}
		v, ok := agg(g, at.Add(-req.Window), to)
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
