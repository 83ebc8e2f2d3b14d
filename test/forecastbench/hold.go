package forecastbench

import (
	"fmt"
	"math"
	"time"
)

// HeldOutTraces are the traces of testdata/traces (see its README): none
// of them was used to choose anything in the product, unlike Traces (the
// project's old tuning traces).
func HeldOutTraces(dir string) []Trace {
	return []Trace{
		{Name: "twitter-stream", File: dir + "/twitter_stream_2021_08_1min.csv", Interval: time.Minute},
		{Name: "worldcup98", File: dir + "/worldcup98_1min.csv", Interval: time.Minute},
		{Name: "alibaba-genai", File: dir + "/alibaba_genai_requests_1min.csv", Interval: time.Minute},
		{Name: "clarknet-http", File: dir + "/clarknet_http_1995_1min.csv", Interval: time.Minute},
		{Name: "nab-elb-requests", File: dir + "/nab_elb_request_count_5min.csv", Interval: 5 * time.Minute},
		{Name: "nab-tweets-aapl", File: dir + "/nab_tweets_aapl_5min.csv", Interval: 5 * time.Minute},
		{Name: "nab-tweets-goog", File: dir + "/nab_tweets_goog_5min.csv", Interval: 5 * time.Minute},
		{Name: "nab-tweets-fb", File: dir + "/nab_tweets_fb_5min.csv", Interval: 5 * time.Minute},
		{Name: "wikipedia-2022", File: dir + "/wikipedia_projectviews_2022_1h.csv", Interval: time.Hour},
		{Name: "calgary-http", File: dir + "/calgary_http_1994_1h.csv", Interval: time.Hour},
		{Name: "saskatchewan-http", File: dir + "/saskatchewan_http_1995_1h.csv", Interval: time.Hour},
	}
}

// Hold reads tr and puts at most its first span on a grid of step starting
// at its first sample, never interpolating: the value at a grid time is the
// last sample at or before it while that sample is younger than
// tr.Interval (a trace coarser than step is held, as a recorded value is
// until the next one), NaN after that (a gap). The grid ends with the
// trace's last sample's interval.
func Hold(tr Trace, step, span time.Duration) (Grid, error) {
	pts, err := load(tr.File)
	if err != nil {
		return Grid{}, err
	}
	if len(pts) < 2 {
		return Grid{}, fmt.Errorf("%s: fewer than two samples", tr.File)
	}
	if end := pts[len(pts)-1].at.Add(tr.Interval).Sub(pts[0].at); end < span {
		span = end
	}
	g := Grid{Start: pts[0].at, Step: step, Values: make([]float64, int(span/step))}
	k := 0
	for i := range g.Values {
		at := g.Start.Add(time.Duration(i) * step)
		for k+1 < len(pts) && !pts[k+1].at.After(at) {
			k++
		}
		g.Values[i] = math.NaN()
		if at.Sub(pts[k].at) < tr.Interval {
			g.Values[i] = pts[k].value
		}
	}
	return g, nil
}

// Autocorrelation is the Pearson correlation of values with themselves lag
// steps later, over the pairs where both are known (NaN when fewer than
// two pairs or no variance).
func Autocorrelation(values []float64, lag int) float64 {
	var n, sx, sy, sxx, syy, sxy float64
	for i := 0; i+lag < len(values); i++ {
		x, y := values[i], values[i+lag]
		if math.IsNaN(x) || math.IsNaN(y) {
			continue
		}
		n++
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
	}
	if n < 2 {
		return math.NaN()
	}
	cov := sxy/n - sx/n*sy/n
	vx, vy := sxx/n-sx/n*sx/n, syy/n-sy/n*sy/n
	if vx <= 0 || vy <= 0 {
		return math.NaN()
	}
	return cov / math.Sqrt(vx*vy)
}
