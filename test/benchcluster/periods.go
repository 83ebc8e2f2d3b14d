package benchcluster

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The pure parts of TestBenchSyncPeriods (`make bench-sync-periods`): N
// Autoscalers split across several spec.syncPeriodSeconds, each reading its
// own series of one External metric through ebbflow-adapter, and what they
// cost kube-apiserver, the adapter and ebbflow-autoscaler over a window.

// PeriodGroup is Count autoscalers evaluated every Period.
type PeriodGroup struct {
	Period time.Duration
	Count  int
}

// SplitPeriods splits n autoscalers evenly across periods, the first groups
// taking the remainder. Periods must be whole seconds of at least one
// (spec.syncPeriodSeconds).
func SplitPeriods(n int, periods []time.Duration) ([]PeriodGroup, error) {
	if n <= 0 {
		return nil, fmt.Errorf("the number of autoscalers is %d, want at least 1", n)
	}
	if len(periods) == 0 {
		return nil, errors.New("no sync period given")
	}
	out := make([]PeriodGroup, len(periods))
	for i, p := range periods {
		if p < time.Second || p%time.Second != 0 {
			return nil, fmt.Errorf("sync period %v: want whole seconds, at least 1s", p)
		}
		out[i] = PeriodGroup{Period: p, Count: n / len(periods)}
		if i < n%len(periods) {
			out[i].Count++
		}
	}
	return out, nil
}

// ParsePeriods parses comma-separated Go durations ("5s,15s,60s").
func ParsePeriods(s string) ([]time.Duration, error) {
	var out []time.Duration
	for f := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("sync periods %q: %w", s, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// DueRate is Σ 1/period over the autoscalers of groups: the evaluations per
// second they are due, each reading its metric once.
func DueRate(groups []PeriodGroup) float64 {
	var r float64
	for _, g := range groups {
		r += float64(g.Count) / g.Period.Seconds()
	}
	return r
}

// DueRateAfter is the evaluations per second of groups when each autoscaler
// is evaluated again one period after its previous evaluation ended (as the
// controller requeues it, like kube-controller-manager), evaluations taking
// d each.
func DueRateAfter(groups []PeriodGroup, d time.Duration) float64 {
	var r float64
	for _, g := range groups {
		r += float64(g.Count) / (g.Period + d).Seconds()
	}
	return r
}

// MaxPeriod is the longest period of groups.
func MaxPeriod(groups []PeriodGroup) time.Duration {
	var m time.Duration
	for _, g := range groups {
		m = max(m, g.Period)
	}
	return m
}

// PeriodResult is one window of TestBenchSyncPeriods.
type PeriodResult struct {
	Groups []PeriodGroup
	Window time.Duration
	// Evals is ebbflow-autoscaler's evaluations in the window (its
	// reconcile duration histogram's count).
	Evals float64
	// EvalTime is the mean duration of those evaluations.
	EvalTime time.Duration
	// MetricReads is the external.metrics.k8s.io requests ebbflow-adapter
	// answered (its ebbflow_adapter_api_request_duration_seconds count),
	// from every client.
	MetricReads float64
	// APIRequests are the requests of ebbflow-autoscaler's user to
	// kube-apiserver by Category (audit log), metrics API reads included.
	APIRequests map[string]int
	// CPU of ebbflow-autoscaler, ebbflow-adapter and kube-apiserver in the
	// window; RSS of ebbflow-autoscaler at its end.
	CPU, AdapterCPU, APIServerCPU time.Duration
	RSS                           int64
}

func (r PeriodResult) perSecond(x float64) float64 { return x / r.Window.Seconds() }

// APITotal is the autoscaler's requests to kube-apiserver in the window.
func (r PeriodResult) APITotal() int {
	n := 0
	for _, v := range r.APIRequests {
		n += v
	}
	return n
}

// Mix describes the groups: "100×5s + 100×15s + 100×60s".
func Mix(groups []PeriodGroup) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%d×%v", g.Count, g.Period))
	}
	return strings.Join(parts, " + ")
}

// PeriodTable is the report's table: one row a result, rates per second
// next to the due rate Σ 1/period.
func PeriodTable(rs []PeriodResult) string {
	var b strings.Builder
	b.WriteString("| autoscalers | due Σ 1/period (/s) | evaluations/s (Σ 1/(period + mean evaluation time)) | mean evaluation ms | metric reads/s at the adapter | autoscaler → kube-apiserver requests/s (audit) | of which metrics API /s | /scale GET /s | other /s | autoscaler CPU ms/s (µs/evaluation) | adapter CPU ms/s | kube-apiserver CPU ms/s | autoscaler RSS MiB |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		total := r.APITotal()
		metrics, scale := r.APIRequests[CatMetrics], r.APIRequests[CatScaleGet]
		perEval := 0.0
		if r.Evals > 0 {
			perEval = float64(r.CPU.Microseconds()) / r.Evals
		}
		fmt.Fprintf(&b, "| %s | %.2f | %.2f (%.2f) | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f (%.0f) | %.1f | %.1f | %.0f |\n",
			Mix(r.Groups), DueRate(r.Groups), r.perSecond(r.Evals), DueRateAfter(r.Groups, r.EvalTime),
			float64(r.EvalTime.Microseconds())/1000, r.perSecond(r.MetricReads),
			r.perSecond(float64(total)), r.perSecond(float64(metrics)), r.perSecond(float64(scale)),
			r.perSecond(float64(total-metrics-scale)),
			r.perSecond(float64(r.CPU.Milliseconds())), perEval,
			r.perSecond(float64(r.AdapterCPU.Milliseconds())), r.perSecond(float64(r.APIServerCPU.Milliseconds())),
			float64(r.RSS)/(1<<20))
	}
	return b.String()
}
