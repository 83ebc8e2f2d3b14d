package loadgen

import (
	"math"
	"time"
)

// Latencies are kept in a log-linear histogram of fixed size: bucket i holds
// durations in (base^(i-1), base^i] microseconds, so a quantile is off by at
// most histogramGrowth-1 (1%) relative, whatever the number of samples. The
// largest bucket holds everything above about an hour.
const (
	histogramGrowth  = 1.01
	histogramBuckets = 2200 // 1.01^2200 µs ≈ 9.3 h
)

// histogram counts latencies; the zero value is not usable, see newHistogram.
type histogram struct {
	counts []uint64
	n      uint64
	max    time.Duration
}

func newHistogram() *histogram {
	return &histogram{counts: make([]uint64, histogramBuckets)}
}

// bucket returns the index of d's bucket.
func bucket(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	i := int(math.Ceil(math.Log(us) / math.Log(histogramGrowth)))
	return min(i, histogramBuckets-1)
}

// upper returns the upper bound of bucket i.
func upper(i int) time.Duration {
	return time.Duration(math.Pow(histogramGrowth, float64(i)) * float64(time.Microsecond))
}

func (h *histogram) observe(d time.Duration) {
	h.counts[bucket(d)]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the upper bound of the bucket holding the q-quantile,
// capped at the largest latency seen; 0 without samples.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(upper(i), h.max)
		}
	}
	return h.max
}

// latency summarizes h.
func (h *histogram) latency() Latency {
	return Latency{P50: h.quantile(0.5), P90: h.quantile(0.9), P99: h.quantile(0.99), Max: h.max}
}
