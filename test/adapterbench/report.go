package adapterbench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Path is what one series of sequential requests of one kind measured.
type Path struct {
	// Name says which request and which way, e.g. "* via kube-apiserver".
	Name    string
	Latency Latency
	// Handler is the adapter's own time per request, from its
	// apiserver_request_duration_seconds (custom.metrics.k8s.io).
	Handler Mean
	// Query is Prometheus' time per instant query received meanwhile, from
	// its prometheus_http_request_duration_seconds{handler="/api/v1/query"}.
	Query Mean
	// Backend is the adapter's own view of its Prometheus round trips (its
	// ebbflow_adapter_prometheus_request_duration_seconds; ebbflow-adapter
	// only).
	Backend Mean
}

// QueriesPerRequest is how many instant queries Prometheus received per
// request of the path.
func (p Path) QueriesPerRequest() float64 {
	if p.Latency.N == 0 {
		return 0
	}
	return p.Query.Count / float64(p.Latency.N)
}

// Result is one adapter's figures.
type Result struct {
	Adapter string
	// Paths are, in order: * via kube-apiserver, * direct, one pod via
	// kube-apiserver, one pod direct.
	Paths []Path
	// Throughput is answered `*` requests per second through kube-apiserver
	// with Clients concurrent clients over Window; Errors counts the failed.
	Throughput float64
	Clients    int
	Window     time.Duration
	Errors     int
	PeakRSS    int64
}

// Direct is the latency of one PromQL sent straight to Prometheus.
type Direct struct {
	Shape, PromQL string
	Latency       Latency
}

// Report is one run.
type Report struct {
	Date    time.Time
	Pods    int
	Uptime  string // `uptime` before and after
	Results []Result
	Direct  []Direct
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// orNA formats a mean in ms, "n/a" when nothing was observed.
func orNA(m Mean) string {
	if m.Count == 0 {
		return "n/a"
	}
	return ms(m.Avg)
}

// ratio formats b/a ("n/a" when a is not positive).
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f×", b/a)
}

// Write renders the report as Markdown: the side-by-side table (with the
// ratio of the second adapter to the first when there are two), then each
// adapter's breakdown and the direct PromQL.
func (r Report) Write(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "adapter bench %s, %d pods; load: %s\n\n", r.Date.UTC().Format(time.RFC3339), r.Pods, r.Uptime)
	b.WriteString("| figure |")
	for _, res := range r.Results {
		fmt.Fprintf(&b, " %s |", res.Adapter)
	}
	two := len(r.Results) == 2
	if two {
		b.WriteString(" ratio |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(r.Results)))
	if two {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	row := func(name string, v func(Result) float64, format func(float64) string, lowerIsBetter bool) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, res := range r.Results {
			fmt.Fprintf(&b, " %s |", format(v(res)))
		}
		if two {
			a, c := v(r.Results[0]), v(r.Results[1])
			if !lowerIsBetter {
				a, c = c, a
			}
			fmt.Fprintf(&b, " %s |", ratio(a, c))
		}
		b.WriteString("\n")
	}
	msf := func(f float64) string { return ms(time.Duration(f)) }
	for i, p := range r.Results[0].Paths {
		row(p.Name+" p50 ms", func(res Result) float64 { return float64(res.Paths[i].Latency.P50) }, msf, true)
		row(p.Name+" p99 ms", func(res Result) float64 { return float64(res.Paths[i].Latency.P99) }, msf, true)
	}
	res0 := r.Results[0]
	row(fmt.Sprintf("* via kube-apiserver, %d clients, requests/s", res0.Clients), func(res Result) float64 { return res.Throughput },
		func(f float64) string { return fmt.Sprintf("%.1f", f) }, false)
	row("peak RSS MiB", func(res Result) float64 { return float64(res.PeakRSS) },
		func(f float64) string { return fmt.Sprintf("%.0f", f/(1<<20)) }, true)
	for _, res := range r.Results {
		fmt.Fprintf(&b, "\n%s: where a request's time goes (means; errors under load: %d)\n\n", res.Adapter, res.Errors)
		b.WriteString("| request | n | client p50 | client mean | adapter handler | its Prometheus round trip | Prometheus per query | queries/request |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, p := range res.Paths {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %.2f |\n", p.Name, p.Latency.N, ms(p.Latency.P50), ms(p.Latency.Avg),
				ms(p.Handler.Avg), orNA(p.Backend), ms(p.Query.Avg), p.QueriesPerRequest())
		}
	}
	if len(r.Direct) > 0 {
		b.WriteString("\nPromQL straight to Prometheus (client side, one client)\n\n| shape | n | p50 ms | p99 ms | bytes |\n|---|---:|---:|---:|---:|\n")
		for _, d := range r.Direct {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %d |\n", d.Shape, d.Latency.N, ms(d.Latency.P50), ms(d.Latency.P99), len(d.PromQL))
		}
	}
	_, _ = io.WriteString(w, b.String())
}
