//go:build unix

package controller

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"slices"
	"syscall"
	"testing"
	"time"
)

// The scale benchmark runs the real controller — started informers over a
// fake clientset, the rate-limited workqueue, Config.Workers workers, real
// clock and sync period, the deduplicating metrics client as the app wires
// it — for a bounded wall time against N HorizontalPodAutoscalers (drop-in
// mode), each with its own Deployment scale and one metric whose read sleeps
// 5 ms. It is slow (one minute and more per case), so it runs only when
// AUTOSCALER_SCALE_BENCH is set; see docs/benchmarks.md.
//
//	AUTOSCALER_SCALE_BENCH=1 go test -run '^$' -bench Scale -benchtime 1x ./autoscaler/controller/
//
// Environment: AUTOSCALER_SCALE_DURATION (default 75s) is the wall time of
// one case; AUTOSCALER_SCALE_DELAY (default 5ms) the latency of a metric read.
const (
	scaleBenchEnv      = "AUTOSCALER_SCALE_BENCH"
	scaleDurationEnv   = "AUTOSCALER_SCALE_DURATION"
	scaleDelayEnv      = "AUTOSCALER_SCALE_DELAY"
	scaleSyncPeriod    = 15 * time.Second
	scalePodsPerTarget = 3
	scaleSampleEvery   = 100 * time.Millisecond
)

type scaleCase struct {
	n       int
	workers int
	// metric is "pods" (a Pods metric) or "external" (an External metric).
	metric string
	// shared makes every autoscaler ask the same question (External only:
	// Pods questions carry the target's own selector).
	shared bool
	// metrics is the number of distinct External metrics per autoscaler
	// (0 means 1; more than 1 only with metric=external, distinct).
	metrics int
	// perEval is Config.MetricReadsPerEvaluation (0: the default; 1:
	// sequential reads, as upstream).
	perEval int
}

func (c scaleCase) name() string {
	q := "distinct"
	if c.shared {
		q = "shared"
	}
	name := fmt.Sprintf("n=%d/workers=%d/metric=%s/questions=%s", c.n, c.workers, c.metric, q)
	if c.metrics > 1 {
		reads := "concurrent"
		if c.perEval == 1 {
			reads = "sequential"
		}
		name += fmt.Sprintf("/metrics=%d/reads=%s", c.metrics, reads)
	}
	return name
}

func BenchmarkScale(b *testing.B) {
	if os.Getenv(scaleBenchEnv) == "" {
		b.Skipf("set %s=1 to run (about 80 s per case)", scaleBenchEnv)
	}
	duration := envDuration(b, scaleDurationEnv, 75*time.Second)
	delay := envDuration(b, scaleDelayEnv, 5*time.Millisecond)
	for _, c := range []scaleCase{
		{n: 1000, workers: 5, metric: "pods"},
		{n: 1000, workers: 50, metric: "pods"},
		{n: 5000, workers: 2, metric: "pods"},
		{n: 5000, workers: 5, metric: "pods"},
		{n: 5000, workers: 50, metric: "pods"},
		{n: 5000, workers: 5, metric: "external"},
		{n: 5000, workers: 5, metric: "external", shared: true},
	} {
		b.Run(c.name(), func(b *testing.B) {
			var r scaleResult
			for range b.N {
				r = runScale(b, c, duration, delay)
			}
			r.report(b)
		})
	}
}

// BenchmarkScaleSlowMetrics is BenchmarkScale against a metrics API that
// answers in 100 ms (AUTOSCALER_SCALE_DELAY overrides it), with 3 distinct
// External metrics per autoscaler: issue 13's goal is 5,000 autoscalers
// evaluated every 15 s with p99 lag under 1 s at the default settings.
// The sequential case is upstream's way (one read after the other).
//
//	AUTOSCALER_SCALE_BENCH=1 go test -run '^$' -bench ScaleSlowMetrics -benchtime 1x -timeout 30m ./autoscaler/controller/
func BenchmarkScaleSlowMetrics(b *testing.B) {
	if os.Getenv(scaleBenchEnv) == "" {
		b.Skipf("set %s=1 to run (about 80 s per case)", scaleBenchEnv)
	}
	duration := envDuration(b, scaleDurationEnv, 75*time.Second)
	delay := envDuration(b, scaleDelayEnv, 100*time.Millisecond)
	for _, c := range []scaleCase{
		{n: 5000, workers: 5, metric: "external", metrics: 3, perEval: 1},
		{n: 5000, workers: 5, metric: "external", metrics: 3},
		{n: 5000, workers: 50, metric: "external", metrics: 3},
		{n: 5000, workers: 100, metric: "external", metrics: 3},
	} {
		b.Run(c.name(), func(b *testing.B) {
			var r scaleResult
			for range b.N {
				r = runScale(b, c, duration, delay)
			}
			r.report(b)
		})
	}
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		b.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}

// scaleResult holds the figures of one run.
type scaleResult struct {
	n        int
	duration time.Duration
	// Evaluations are split at the n-th lag observation: the first n are
	// the start-up round (every object added at once, due at once), the
	// rest the periodic evaluations.
	startup, steady []time.Duration
	// startupSpan is from the first to the n-th evaluation.
	startupSpan time.Duration
	// steadyEvals counts evaluations in the window from one sync period
	// after the start to the end.
	steadyEvals   int
	steadyWindow  time.Duration
	steadyCPU     time.Duration
	totalCPU      time.Duration
	fixtureHeap   uint64
	peakHeap      uint64
	steadyLive    uint64
	maxGoroutines uint64
	reads         int
	statusWrites  int
	failed        float64
}

func (r scaleResult) report(b *testing.B) {
	all := len(r.startup) + len(r.steady)
	b.ReportMetric(float64(r.steadyEvals)/r.steadyWindow.Seconds(), "evals/s")
	b.ReportMetric(float64(r.n)/scaleSyncPeriod.Seconds(), "due-evals/s")
	if r.startupSpan > 0 {
		b.ReportMetric(float64(r.n)/r.startupSpan.Seconds(), "startup-evals/s")
	}
	b.ReportMetric(float64(percentile(r.steady, 0.50).Nanoseconds()), "lag-p50-ns")
	b.ReportMetric(float64(percentile(r.steady, 0.99).Nanoseconds()), "lag-p99-ns")
	b.ReportMetric(float64(percentile(r.steady, 1).Nanoseconds()), "lag-max-ns")
	b.ReportMetric(float64(percentile(r.startup, 0.99).Nanoseconds()), "startup-lag-p99-ns")
	b.ReportMetric(float64(percentile(r.startup, 1).Nanoseconds()), "startup-lag-max-ns")
	b.ReportMetric(float64(len(r.steady)), "periodic-evals")
	b.ReportMetric(r.steadyCPU.Seconds()/r.steadyWindow.Seconds(), "steady-cpu-cores")
	b.ReportMetric(r.totalCPU.Seconds()/r.duration.Seconds(), "cpu-cores")
	if r.steadyEvals > 0 {
		b.ReportMetric(float64(r.steadyCPU.Nanoseconds())/float64(r.steadyEvals), "cpu-ns/eval")
	}
	b.ReportMetric(float64(r.fixtureHeap), "fixture-heap-bytes")
	b.ReportMetric(float64(r.peakHeap), "peak-heap-bytes")
	b.ReportMetric(float64(r.steadyLive), "steady-live-bytes")
	b.ReportMetric(float64(r.maxGoroutines), "max-goroutines")
	if all > 0 {
		b.ReportMetric(float64(r.reads)/float64(all), "reads/eval")
	}
	b.ReportMetric(float64(r.statusWrites), "status-writes")
	if len(r.steady)+len(r.startup) > 0 {
		b.ReportMetric(float64(r.statusWrites)/float64(len(r.steady)+len(r.startup)), "writes/eval")
	}
	b.ReportMetric(r.failed, "failed-evals")
}

// percentile returns the q-quantile of ds (nearest rank); ds is sorted in
// place.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

type runtimeSample struct{ heap, live, goroutines uint64 }

func readMetrics() runtimeSample {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(s)
	return runtimeSample{heap: s[0].Value.Uint64(), live: s[1].Value.Uint64(), goroutines: s[2].Value.Uint64()}
}

// cpuTime is the user plus system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil || len(data) < 14 {
		return "unknown"
	}
	return string(data[:14])
}
