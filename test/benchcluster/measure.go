// Package benchcluster measures controllers on the local cluster
// (test/cluster). TestBenchCluster (build tag benchcluster, `make
// bench-cluster`) runs kube-controller-manager's HPA controller and
// ebbflow-autoscaler (drop-in mode) one after the other on the same
// HorizontalPodAutoscalers and the same external metrics API
// (test/metricsstub, answering after a fixed delay). TestBenchSyncPeriods
// (same tag, `make bench-sync-periods`) measures what Autoscalers with mixed
// spec.syncPeriodSeconds cost kube-apiserver, ebbflow-adapter and
// ebbflow-autoscaler. This file, report.go, audit.go and periods.go are
// their pure parts: reading Prometheus text, histograms, /proc and audit
// logs, and the figures of one run.
package benchcluster

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one /metrics page, parsed.
type Scrape map[string]*dto.MetricFamily

// ParseScrape parses the Prometheus text format.
func ParseScrape(text string) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Scrape(fams), nil
}

// matches reports whether m has every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Sum adds the counter, gauge or untyped values (a histogram's count) of
// the series of name that carry the labels of want.
func (s Scrape) Sum(name string, want map[string]string) float64 {
	var sum float64
	for _, m := range s[name].GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// Observed adds the sums and the counts of the histogram or summary series
// of name that carry want's labels (seconds for a duration).
func (s Scrape) Observed(name string, want map[string]string) (sum, count float64) {
	for _, m := range s[name].GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Histogram != nil:
			sum += m.GetHistogram().GetSampleSum()
			count += float64(m.GetHistogram().GetSampleCount())
		case m.Summary != nil:
			sum += m.GetSummary().GetSampleSum()
			count += float64(m.GetSummary().GetSampleCount())
		}
	}
	return sum, count
}

// Histogram is a cumulative histogram: counts of observations ≤ each upper
// bound (ascending), +Inf included as the total.
type Histogram struct {
	Bounds []float64
	Counts []float64
	Total  float64
}

// Histogram merges the histogram series of name that carry want's labels.
func (s Scrape) Histogram(name string, want map[string]string) Histogram {
	by := map[float64]float64{}
	var h Histogram
	for _, m := range s[name].GetMetric() {
		if m.Histogram == nil || !matches(m, want) {
			continue
		}
		for _, b := range m.GetHistogram().GetBucket() {
			by[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		h.Total += float64(m.GetHistogram().GetSampleCount())
	}
	for b := range by {
		if !math.IsInf(b, 1) {
			h.Bounds = append(h.Bounds, b)
		}
	}
	sort.Float64s(h.Bounds)
	for _, b := range h.Bounds {
		h.Counts = append(h.Counts, by[b])
	}
	return h
}

// Sub returns h − before (the observations between two scrapes).
func (h Histogram) Sub(before Histogram) Histogram {
	out := Histogram{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts), Total: h.Total - before.Total}
	for i, b := range out.Bounds {
		if j := slices.Index(before.Bounds, b); j >= 0 {
			out.Counts[i] -= before.Counts[j]
		}
	}
	return out
}

// Quantile estimates the q-quantile as Prometheus' histogram_quantile does:
// linear within the bucket that holds it, from 0 for the first bucket; an
// observation above the last bound yields that bound. NaN without
// observations.
func (h Histogram) Quantile(q float64) float64 {
	if h.Total <= 0 {
		return math.NaN()
	}
	rank := q * h.Total
	lower, below := 0.0, 0.0
	for i, b := range h.Bounds {
		if h.Counts[i] >= rank {
			in := h.Counts[i] - below
			if in <= 0 {
				return b
			}
			return lower + (b-lower)*(rank-below)/in
		}
		lower, below = b, h.Counts[i]
	}
	if len(h.Bounds) == 0 {
		return math.NaN()
	}
	return h.Bounds[len(h.Bounds)-1]
}

// userHZ is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// ProcSample is a process' CPU time and resident memory.
type ProcSample struct {
	CPU time.Duration
	RSS int64 // bytes
}

// ReadProc reads /proc/<pid>/stat (utime + stime) and /proc/<pid>/status
// (VmRSS).
func ReadProc(pid int) (ProcSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcSample{}, err
	}
	return ParseProc(string(stat), string(status))
}

// ParseProc parses the contents of /proc/<pid>/stat and /proc/<pid>/status.
func ParseProc(stat, status string) (ProcSample, error) {
	// The command (field 2) is in parentheses and may hold spaces: fields
	// are counted after the last ')'. utime and stime are fields 14 and 15.
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return ProcSample{}, fmt.Errorf("stat: no command field")
	}
	f := strings.Fields(stat[end+1:])
	if len(f) < 13 {
		return ProcSample{}, fmt.Errorf("stat: %d fields after the command, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return ProcSample{}, fmt.Errorf("stat: %w", err)
		}
		ticks += v
	}
	out := ProcSample{CPU: time.Duration(ticks) * time.Second / userHZ}
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return ProcSample{}, fmt.Errorf("status VmRSS: %w", err)
			}
			out.RSS = kb * 1024
		}
	}
	return out, nil
}

// Percentile returns the q-quantile of ds by nearest rank (0 when empty).
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Overruns returns, for every pair of consecutive times of one object's
// first metric read, how much later than one sync period the second read
// came (negative values are kept: a read can come early when the previous
// evaluation was retried). The same definition applies to both controllers,
// from the metrics API's side.
func Overruns(reads map[string][]time.Time, period time.Duration, from, to time.Time) []time.Duration {
	var out []time.Duration
	for _, ts := range reads {
		for i := 1; i < len(ts); i++ {
			if ts[i].Before(from) || ts[i].After(to) {
				continue
			}
			out = append(out, ts[i].Sub(ts[i-1])-period)
		}
	}
	return out
}
