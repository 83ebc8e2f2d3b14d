package forecastbench

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// Trace is one recorded request-rate series.
type Trace struct {
	// Name labels the series (trace="Name") and the results.
	Name string
	// File is the CSV file: a header, then unix_seconds,value rows sorted
	// by time.
	File string
	// Interval is the source's sampling interval; Resample interpolates
	// between samples at most 2×Interval apart and leaves longer gaps empty.
	Interval time.Duration
}

// Traces are the three traces of /work/shared/traces.
func Traces(dir string) []Trace {
	return []Trace{
		{Name: "nasa", File: dir + "/nasa_http_1995_1min.csv", Interval: time.Minute},
		{Name: "wikipedia", File: dir + "/wikipedia_projectviews_2019_1h.csv", Interval: time.Hour},
		{Name: "taxi", File: dir + "/nab_nyc_taxi.csv", Interval: 30 * time.Minute},
	}
}

// point is one sample of a trace.
type point struct {
	at    time.Time
	value float64
}

// maxRows bounds what a trace file may hold.
const maxRows = 2_000_000

func load(path string) ([]point, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []point
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			continue // header
		}
		if len(out) == maxRows {
			return nil, fmt.Errorf("%s: more than %d rows", path, maxRows)
		}
		ts, v, ok := strings.Cut(sc.Text(), ",")
		sec, err1 := strconv.ParseInt(ts, 10, 64)
		val, err2 := strconv.ParseFloat(v, 64)
		if !ok || err1 != nil || err2 != nil || math.IsNaN(val) || math.IsInf(val, 0) {
			return nil, fmt.Errorf("%s:%d: want unix_seconds,value, got %q", path, line+1, sc.Text())
		}
		p := point{at: time.Unix(sec, 0).UTC(), value: val}
		if len(out) > 0 && !p.at.After(out[len(out)-1].at) {
			return nil, fmt.Errorf("%s:%d: not sorted by time", path, line+1)
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// Grid is a trace on a regular grid: Values[i] at Start + i×Step, NaN in
// gaps.
type Grid struct {
	Start  time.Time
	Step   time.Duration
	Values []float64
}

// Resample reads tr and puts its first span on a grid of step, starting at
// its first sample: values linearly interpolated between consecutive
// samples at most 2×tr.Interval apart, NaN across longer gaps.
func Resample(tr Trace, step, span time.Duration) (Grid, error) {
	pts, err := load(tr.File)
	if err != nil {
		return Grid{}, err
	}
	if len(pts) < 2 {
		return Grid{}, fmt.Errorf("%s: fewer than two samples", tr.File)
	}
	g := Grid{Start: pts[0].at, Step: step, Values: make([]float64, int(span/step))}
	k := 0
	for i := range g.Values {
		at := g.Start.Add(time.Duration(i) * step)
		for k+1 < len(pts) && !pts[k+1].at.After(at) {
			k++
		}
		g.Values[i] = math.NaN()
		switch {
		case pts[k].at.Equal(at):
			g.Values[i] = pts[k].value
		case k+1 < len(pts) && pts[k+1].at.Sub(pts[k].at) <= 2*tr.Interval:
			a, b := pts[k], pts[k+1]
			w := float64(at.Sub(a.at)) / float64(b.at.Sub(a.at))
			g.Values[i] = a.value + w*(b.value-a.value)
		}
	}
	return g, nil
}

// Scaled returns g with its values multiplied so that the peak is peak.
func (g Grid) Scaled(peak float64) Grid {
	m := 0.0
	for _, v := range g.Values {
		if !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	out := g
	out.Values = make([]float64, len(g.Values))
	for i, v := range g.Values {
		out.Values[i] = v * peak / m
	}
	return out
}
