// Package adapterbench compares ebbflow-adapter with prometheus-adapter on
// one local cluster (test/cluster): the same rule file, the same Prometheus
// fed with a series per pod, the same 1,000 pods, each adapter registered
// behind kube-apiserver in turn on the same port. TestAdapterBench (build
// tag adapterbench, `make bench-adapter`) measures a `*` Pods request and a
// one-pod request: latency with one client through kube-apiserver and
// straight on the adapter's port, throughput with concurrent clients, peak
// RSS, and where the time goes (Prometheus' own time for the queries the
// adapter sent, the adapter's handler time from its apiserver metrics, the
// aggregation proxy's share as the difference). This file and report.go are
// its pure parts.
package adapterbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/benchcluster"
)

// Latency summarises the durations of one series of sequential requests.
type Latency struct {
	N             int
	P50, P99, Avg time.Duration
}

// Summarize returns the nearest-rank p50 and p99 and the mean of ds.
func Summarize(ds []time.Duration) Latency {
	l := Latency{N: len(ds), P50: benchcluster.Percentile(ds, 0.5), P99: benchcluster.Percentile(ds, 0.99)}
	if len(ds) == 0 {
		return l
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	l.Avg = sum / time.Duration(len(ds))
	return l
}

// Mean is the mean observation of a histogram or summary between two
// scrapes, and how many there were.
type Mean struct {
	Count float64
	Avg   time.Duration
}

// MeanBetween returns the mean of the histogram or summary name over the
// series with want's labels, between the scrapes before and after. Count is
// 0 (and Avg 0) when nothing was observed.
func MeanBetween(before, after benchcluster.Scrape, name string, want map[string]string) Mean {
	sb, cb := before.Observed(name, want)
	sa, ca := after.Observed(name, want)
	n := ca - cb
	if n <= 0 {
		return Mean{}
	}
	return Mean{Count: n, Avg: time.Duration((sa - sb) / n * float64(time.Second))}
}

// PeakRSS reads a process' peak resident set size (VmHWM) in bytes.
func PeakRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return ParsePeakRSS(string(status))
}

// ParsePeakRSS reads VmHWM from the contents of /proc/<pid>/status.
func ParsePeakRSS(status string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("status VmHWM: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("status: no VmHWM line")
}
