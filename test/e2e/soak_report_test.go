package e2e

import (
	"fmt"
	"strings"
	"time"
)

// soakReport is the outcome of a soak: the results, the adapter's samples
// and the checks on them.
type soakReport struct {
	d             time.Duration
	start, end    time.Time
	outage        window
	before, after adapterSample
	load          *soakLoad
	probe         *adapterProbe
}

// warmUp is the part of the run after which memory must stop growing.
func (r soakReport) warmUp() window {
	return window{from: r.start, to: r.start.Add(max(r.d/5, 5*time.Second))}
}

// lastFifth is the end of the run, where the heap's floor is read.
func (r soakReport) lastFifth() window { return window{from: r.end.Add(-r.d / 5), to: r.end} }

func (r soakReport) steady() window { return window{from: r.warmUp().to, to: r.end} }

// Bounds of the memory and goroutine checks: generous enough for GC timing,
// tight enough to catch a leak that grows with requests (the run sends
// 200 requests/s).
const (
	heapGrowthFactor = 1.5
	heapSlack        = 16 << 20
	rssSlack         = 32 << 20
	goroutineSlack   = 20
)

func (r soakReport) problems() []string {
	var out []string
	_, bad := classify(r.load.results, r.outage)
	out = append(out, bad...)
	heap := func(s adapterSample) float64 { return s.heap }
	rss := func(s adapterSample) float64 { return s.rss }
	warmHeap, warmRSS := r.probe.maxOf(r.warmUp(), heap), r.probe.maxOf(r.warmUp(), rss)
	// A leak raises the heap's floor; a sample's heap in use also holds the
	// responses in flight (gzip writers and buffers of up to soakWorkers
	// `*` answers, ~1 MiB each), so the maximum after the warm-up measures
	// concurrency and GC timing, not growth: the same adapter binary showed
	// 32 and 74 MiB there. The floor of the last fifth is compared instead.
	if floor := r.probe.minOf(r.lastFifth(), heap); floor > warmHeap*heapGrowthFactor+heapSlack {
		out = append(out, fmt.Sprintf("heap grew after the warm-up: lowest %s in the last fifth of the run, warm-up max %s", mib(floor), mib(warmHeap)))
	}
	if r.after.heap > warmHeap*heapGrowthFactor+heapSlack {
		out = append(out, fmt.Sprintf("heap at the end %s, warm-up max %s", mib(r.after.heap), mib(warmHeap)))
	}
	if late := r.probe.maxOf(r.steady(), rss); late > warmRSS*heapGrowthFactor+rssSlack {
		out = append(out, fmt.Sprintf("RSS grew after the warm-up: max %s, warm-up max %s", mib(late), mib(warmRSS)))
	}
	if g := r.after.goroutines; g > r.before.goroutines*1.2+goroutineSlack {
		out = append(out, fmt.Sprintf("goroutines %v at the end, %v at the start", g, r.before.goroutines))
	}
	secs := r.end.Sub(r.start).Seconds()
	// On-demand discoveries reach Prometheus at most at 2/s plus a burst of 10.
	if n := r.after.onDemand - r.before.onDemand; n > 2*secs+10 {
		out = append(out, fmt.Sprintf("%v on-demand discoveries reached Prometheus in %.0fs: the rate limit (2/s, burst 10) did not hold", n, secs))
	}
	// No amplification: at most one Prometheus request per metrics request
	// (identical concurrent ones share one), plus the on-demand discoveries
	// (a label-values and a series call each) and the relists (one series
	// call per seriesQuery every 10s, and one after each reload).
	known := 0
	for _, res := range r.load.results {
		if res.kind != kindUnknown {
			known++
		}
	}
	if n, bound := r.after.promRequests-r.before.promRequests, float64(known)+2*(r.after.onDemand-r.before.onDemand)+20*(secs/10+3); n > bound {
		out = append(out, fmt.Sprintf("%v Prometheus requests for %d metrics requests: more than one each (bound %v)", n, known, bound))
	}
	if n := r.after.reloadsOK - r.before.reloadsOK; n < 1 {
		out = append(out, "the valid rule file was not reloaded")
	}
	if n := r.after.reloadsFailed - r.before.reloadsFailed; n < 1 {
		out = append(out, "the invalid rule file was not rejected")
	}
	if len(r.load.results) == 0 {
		out = append(out, "no request was sent")
	}
	return out
}

func (r soakReport) String() string {
	var b strings.Builder
	secs := r.end.Sub(r.start).Seconds()
	stats, _ := classify(r.load.results, r.outage)
	fmt.Fprintf(&b, "soak: %v, %d requests (%.0f/s), %d dropped by the bounded schedule; Prometheus down +%.1fs..+%.1fs\n",
		r.d, len(r.load.results), float64(len(r.load.results))/secs, r.load.dropped,
		r.outage.from.Sub(r.start).Seconds(), r.outage.to.Sub(r.start).Seconds())
	fmt.Fprintf(&b, "| request kind | requests | ok | 500 (outage) | failed | p50 | p99 | max |\n|---|---|---|---|---|---|---|---|\n")
	for _, k := range []string{kindSingle, kindStar, kindSelector, kindExternal, kindResource, kindUnknown} {
		if s := stats[k]; s != nil {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %v | %v | %v |\n", k, s.n, s.ok, s.outageErrors, s.failed,
				s.p50.Round(100*time.Microsecond), s.p99.Round(100*time.Microsecond), s.max.Round(time.Millisecond))
		}
	}
	heap := func(s adapterSample) float64 { return s.heap }
	rss := func(s adapterSample) float64 { return s.rss }
	all := window{from: r.start, to: r.end}
	fmt.Fprintf(&b, "adapter RSS: start %s, warm-up max %s, max %s, end %s\n", mib(r.before.rss), mib(r.probe.maxOf(r.warmUp(), rss)), mib(r.probe.maxOf(all, rss)), mib(r.after.rss))
	fmt.Fprintf(&b, "adapter heap in use: start %s, warm-up max %s, max %s, end %s\n", mib(r.before.heap), mib(r.probe.maxOf(r.warmUp(), heap)), mib(r.probe.maxOf(all, heap)), mib(r.after.heap))
	fmt.Fprintf(&b, "adapter goroutines: start %v, max %v, end %v\n", r.before.goroutines, r.probe.maxOf(all, func(s adapterSample) float64 { return s.goroutines }), r.after.goroutines)
	fmt.Fprintf(&b, "Prometheus requests: %.1f/s (deduplicated queries %.1f/s, on-demand discoveries %.2f/s); rule reloads: %v ok, %v rejected\n",
		(r.after.promRequests-r.before.promRequests)/secs, (r.after.dedup-r.before.dedup)/secs, (r.after.onDemand-r.before.onDemand)/secs,
		r.after.reloadsOK-r.before.reloadsOK, r.after.reloadsFailed-r.before.reloadsFailed)
	b.WriteString(r.probe.timeline(r.start))
	return b.String()
}
