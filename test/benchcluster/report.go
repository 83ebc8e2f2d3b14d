package benchcluster

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Result holds the figures of one controller over one measurement window.
type Result struct {
	// Name names the controller and its settings, e.g. "kcm w=5 (default)".
	Name string
	// N is the number of HPAs, SyncPeriod their period.
	N          int
	SyncPeriod time.Duration
	Window     time.Duration
	// Evals is the number of evaluations the controller counted in the
	// window (its own reconcile counter).
	Evals float64
	// LagP50 and LagP99 are from the controller's own histogram (seconds;
	// NaN when it observed nothing).
	LagP50, LagP99 float64
	// Overruns are, per object, how much longer than one sync period passed
	// between two evaluations, seen from the metrics API.
	Overruns []time.Duration
	// CPU is the process' CPU time in the window, RSS its resident memory
	// at the end.
	CPU time.Duration
	RSS int64
	// StubRequests is the number of questions the metrics API received in
	// the window.
	StubRequests float64
	// APIRequests counts, by Category, the requests the controller's
	// identity sent kube-apiserver in the window (from its audit log); nil
	// when not measured.
	APIRequests map[string]int
	// APIServerCPU and EtcdCPU are kube-apiserver's and etcd's CPU time in
	// the window (zero when not measured).
	APIServerCPU, EtcdCPU time.Duration
	// Reactions are the times from a metric change to the /scale write that
	// follows it (the scaling variant).
	Reactions []time.Duration
}

// EvalsPerSecond is the achieved rate.
func (r Result) EvalsPerSecond() float64 { return r.Evals / r.Window.Seconds() }

// DuePerSecond is the rate needed to evaluate every object once a period.
func (r Result) DuePerSecond() float64 { return float64(r.N) / r.SyncPeriod.Seconds() }

// CPUPerEval is the CPU time per evaluation (0 without evaluations).
func (r Result) CPUPerEval() time.Duration {
	if r.Evals <= 0 {
		return 0
	}
	return time.Duration(float64(r.CPU) / r.Evals)
}

// RequestsPerEval is the metrics API questions per evaluation.
func (r Result) RequestsPerEval() float64 {
	if r.Evals <= 0 {
		return 0
	}
	return r.StubRequests / r.Evals
}

// APIRequestsPerEval is the requests to kube-apiserver per evaluation, in
// all (every category) or in the categories given; NaN when not measured or
// without evaluations.
func (r Result) APIRequestsPerEval(categories ...string) float64 {
	if r.APIRequests == nil || r.Evals <= 0 {
		return math.NaN()
	}
	var n int
	if len(categories) == 0 {
		for _, v := range r.APIRequests {
			n += v
		}
	} else {
		for _, c := range categories {
			n += r.APIRequests[c]
		}
	}
	return float64(n) / r.Evals
}

func perEval(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

func seconds(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return (time.Duration(v * float64(time.Second))).Round(time.Millisecond).String()
}

func dur(d time.Duration) string { return d.Round(time.Millisecond).String() }

// Table renders results as a Markdown table; the last column is each row's
// evaluations per second over the baseline's (the first row whose Name is
// baseline; "–" if none).
func Table(results []Result, baseline string) string {
	var base float64
	for _, r := range results {
		if r.Name == baseline {
			base = r.EvalsPerSecond()
			break
		}
	}
	var b strings.Builder
	b.WriteString("| controller | N | evals/s (due) | lag p50 / p99 (own) | period overrun p50 / p99 (metrics API side) | CPU/eval | CPU cores | RSS | metric requests/eval | kube-apiserver requests/eval | change → /scale p50 / p99 (n) | evals/s ÷ " + baseline + " |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		ratio := "–"
		if base > 0 {
			ratio = fmt.Sprintf("%.1f×", r.EvalsPerSecond()/base)
		}
		overrun := "– (no object read twice in the window)"
		if len(r.Overruns) > 0 {
			overrun = dur(Percentile(r.Overruns, 0.5)) + " / " + dur(Percentile(r.Overruns, 0.99))
		}
		react := "–"
		if len(r.Reactions) > 0 {
			react = fmt.Sprintf("%s / %s (%d)", dur(Percentile(r.Reactions, 0.5)), dur(Percentile(r.Reactions, 0.99)), len(r.Reactions))
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f (%.1f) | %s / %s | %s | %s | %.2f | %d MiB | %.2f | %s | %s | %s |\n",
			r.Name, r.N, r.EvalsPerSecond(), r.DuePerSecond(), seconds(r.LagP50), seconds(r.LagP99), overrun,
			r.CPUPerEval().Round(time.Microsecond), r.CPU.Seconds()/r.Window.Seconds(), r.RSS>>20,
			r.RequestsPerEval(), perEval(r.APIRequestsPerEval()), react, ratio)
	}
	return b.String()
}

// APITable renders, per result, the requests its identity sent
// kube-apiserver per evaluation, in all and by Category, and kube-apiserver's
// and etcd's CPU (cores, averaged over the window).
func APITable(results []Result) string {
	var b strings.Builder
	b.WriteString("| controller | N | evals | requests/eval |")
	for _, c := range Categories {
		b.WriteString(" " + c + " |")
	}
	b.WriteString(" kube-apiserver CPU cores | etcd CPU cores |\n|---|---:|---:|---:|")
	b.WriteString(strings.Repeat("---:|", len(Categories)+2) + "\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s |", r.Name, r.N, r.Evals, perEval(r.APIRequestsPerEval()))
		for _, c := range Categories {
			b.WriteString(" " + perEval(r.APIRequestsPerEval(c)) + " |")
		}
		fmt.Fprintf(&b, " %.2f | %.2f |\n", r.APIServerCPU.Seconds()/r.Window.Seconds(), r.EtcdCPU.Seconds()/r.Window.Seconds())
	}
	return b.String()
}
