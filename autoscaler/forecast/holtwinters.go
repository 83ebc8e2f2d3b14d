package forecast

import (
	"fmt"
	"math"
	"time"
)

// Holt-Winters' buckets a season and smoothing factors.
const (
	hwBuckets = 288
	hwAlpha   = 0.2
	hwBeta    = 0.01
	hwGamma   = 0.3
)

// holtWinters fits additive Holt-Winters on the last req.Seasons seasons of
// g averaged into hwBuckets buckets a season, the last bucket ending at Now,
// and forecasts the bucket holding Now + Lead.
func holtWinters(g view, req Request) Forecast {
	width := req.Season / hwBuckets
	if width < g.step {
		width = g.step
	}
	perSeason := int(req.Season / width)
	avail := int(req.Now.Sub(g.start) / width)
	n := min(req.Seasons*perSeason, avail)
	if n < perSeason {
		return none(ReasonShortHistory, fmt.Sprintf("the history covers less than one season (%v)", req.Season))
	}
	from := req.Now.Add(-time.Duration(n) * width)
	bucket := func(j int) (float64, bool) {
		lo := from.Add(time.Duration(j) * width)
		return mean(g, lo, lo.Add(width-1))
	}
	season := make([]float64, perSeason)
	sum, cnt := 0.0, 0
	for j := range perSeason {
		if x, ok := bucket(j); ok {
			season[j] = x
			sum += x
			cnt++
		} else {
			season[j] = math.NaN()
		}
	}
	if cnt == 0 {
		return none(ReasonNoSeasonData, "no sample in the first season of the fit")
	}
	level, trend := sum/float64(cnt), 0.0
	for j := range season {
		if math.IsNaN(season[j]) {
			season[j] = 0
		} else {
			season[j] -= level
		}
	}
	for j := perSeason; j < n; j++ {
		p := j % perSeason
		x, ok := bucket(j)
		if !ok {
			x = level + trend + season[p]
		}
		prev := level
		level = hwAlpha*(x-season[p]) + (1-hwAlpha)*(level+trend)
		trend = hwBeta*(level-prev) + (1-hwBeta)*trend
		season[p] = hwGamma*(x-level) + (1-hwGamma)*season[p]
	}
	h := max(1, int(math.Ceil(float64(req.Lead)/float64(width))))
	v := level + float64(h)*trend + season[(n-1+h)%perSeason]
	return Forecast{OK: true, Value: v, Seasons: n / perSeason}
}
