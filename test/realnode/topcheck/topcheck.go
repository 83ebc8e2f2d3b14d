// Package topcheck compares what `kubectl top pods` shows — the
// metrics.k8s.io answer of ebbflow-adapter, from Prometheus — with what the
// kubelet itself serves on /metrics/resource: CPU as the rate of the
// kubelet's cumulative counters over a window, memory as its working set.
package topcheck

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Tolerances of a comparison. kubectl top rounds CPU to 1m and memory to
// 1Mi; the adapter's CPU is Prometheus' rate over its window, which ends at
// the last scrape and extrapolates, while the kubelet's counters step at
// cAdvisor's housekeeping.
const (
	cpuRel, cpuAbsMilli = 0.30, 5
	memRel, memAbsMiB   = 0.10, 1
	// MinPods is how many pods a comparison needs, and BusyMilli the CPU
	// at least one of them must use, so that idle zeros cannot pass alone.
	MinPods   = 3
	BusyMilli = 20
	// Settle is how long before the window a pod must have been counted
	// by the kubelet to be compared: a pod just started has its first
	// Prometheus samples late and its start-up burst at the window's edge,
	// where rate's extrapolation and a plain slope part.
	Settle = 10 * time.Second
)

// Top is one pod's line of `kubectl top pods`.
type Top struct{ CPUMilli, MemMiB float64 }

// ParseTop parses `kubectl top pods --no-headers` ("NAME 123m 45Mi").
func ParseTop(out string) (map[string]Top, error) {
	top := map[string]Top{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[2], "Mi") {
			return nil, fmt.Errorf("kubectl top: unexpected line %q", line)
		}
		cpu, err1 := strconv.ParseFloat(strings.TrimSuffix(f[1], "m"), 64)
		mem, err2 := strconv.ParseFloat(strings.TrimSuffix(f[2], "Mi"), 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("kubectl top: unexpected line %q", line)
		}
		top[f[0]] = Top{CPUMilli: cpu, MemMiB: mem}
	}
	return top, nil
}

// Kubelet is a read of the kubelet's /metrics/resource for one namespace:
// per pod, per container, the cumulative CPU seconds and the working set
// with the times the kubelet stamped on them.
type Kubelet map[string]map[string]Container

// Container is one container's samples.
type Container struct {
	CPUSeconds float64
	CPUAt      time.Time
	MemBytes   float64
}

// ParseKubelet parses /metrics/resource, keeping the containers of ns.
func ParseKubelet(body, ns string) (Kubelet, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("kubelet /metrics/resource: %w", err)
	}
	k := Kubelet{}
	set := func(name string, f func(*Container, float64, time.Time)) {
		for _, m := range families[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != ns {
				continue
			}
			pod, ctr := labels["pod"], labels["container"]
			if k[pod] == nil {
				k[pod] = map[string]Container{}
			}
			c := k[pod][ctr]
			v := m.GetGauge().GetValue()
			if m.GetCounter() != nil {
				v = m.GetCounter().GetValue()
			}
			f(&c, v, time.UnixMilli(m.GetTimestampMs()))
			k[pod][ctr] = c
		}
	}
	set("container_cpu_usage_seconds_total", func(c *Container, v float64, at time.Time) { c.CPUSeconds, c.CPUAt = v, at })
	set("container_memory_working_set_bytes", func(c *Container, v float64, _ time.Time) { c.MemBytes = v })
	return k, nil
}

// Reads is a run of kubelet reads of one namespace, in the order taken:
// per pod and container, the distinct CPU samples by the kubelet's stamp,
// and the working set of the last read.
type Reads struct {
	cpu map[string]map[string][]Container
	mem map[string]float64
}

// Add appends a read.
func (r *Reads) Add(k Kubelet) {
	if r.cpu == nil {
		r.cpu, r.mem = map[string]map[string][]Container{}, map[string]float64{}
	}
	for pod, ctrs := range k {
		if r.cpu[pod] == nil {
			r.cpu[pod] = map[string][]Container{}
		}
		mem := 0.0
		for name, c := range ctrs {
			mem += c.MemBytes / (1 << 20)
			s := r.cpu[pod][name]
			if c.CPUAt.IsZero() || (len(s) > 0 && !c.CPUAt.After(s[len(s)-1].CPUAt)) {
				continue
			}
			r.cpu[pod][name] = append(s, c)
		}
		r.mem[pod] = mem
	}
}

// Result is a comparison: the pods compared, with both sides, and what
// disagreed.
type Result struct {
	Compared []string
	Lines    []string // "pod: top 120m 14Mi, kubelet 118.4m 13.9Mi"
	Problems []string
}

// Err is nil when at least MinPods pods were compared, one of them busy,
// and none disagreed.
func (r Result) Err() error {
	var msgs []string
	if len(r.Compared) < MinPods {
		msgs = append(msgs, fmt.Sprintf("only %d pods compared, want at least %d", len(r.Compared), MinPods))
	}
	msgs = append(msgs, r.Problems...)
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("kubectl top vs kubelet: %s", strings.Join(msgs, "; "))
}

// Query is when and how kubectl top's CPU was computed: the adapter
// evaluated its rate over Window at a time between Start and End (the
// kubectl call), from the kubelet's samples Prometheus had scraped by then;
// a sample the kubelet stamped less than Lag (a scrape interval and the
// scrape's own time) before that time may not have been scraped yet.
type Query struct {
	Start, End  time.Time
	Window, Lag time.Duration
}

// cpuViews are the readings the adapter may have computed for a pod under
// q: the window ending at Start or at End, each with every sample the
// kubelet stamped in it or without those of its last Lag.
func (q Query) cpuViews() []view {
	ends := []time.Time{q.Start}
	if !q.End.Equal(q.Start) {
		ends = append(ends, q.End)
	}
	var vs []view
	for _, to := range ends {
		vs = append(vs, view{to.Add(-q.Window), to, to})
		if q.Lag > 0 {
			vs = append(vs, view{to.Add(-q.Window), to, to.Add(-q.Lag)})
		}
	}
	return vs
}

// view is one window (from, to] of a rate, with the samples stamped up to
// seen.
type view struct{ from, to, seen time.Time }

// Compare compares top with the kubelet's reads: each pod's CPU against
// the rate of its counters over the window the adapter's rate covered —
// the kubelet's stamped samples are the ones Prometheus scraped — taking
// the one of q's views nearest to top, memory against the last working
// set. A pod top shows that the reads lack is a problem (the kubelet is
// the source). Only pods the kubelet counted Settle before the earliest
// window's start are compared.
func Compare(top map[string]Top, q Query, reads Reads) Result {
	var r Result
	busy := false
	pods := make([]string, 0, len(top))
	for p := range top {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, pod := range pods {
		tp := top[pod]
		ctrs, ok := reads.cpu[pod]
		if !ok {
			r.Problems = append(r.Problems, fmt.Sprintf("pod %s: in kubectl top, not in the kubelet's answer", pod))
			continue
		}
		cpu, lo, hi, old, ok := nearestRate(ctrs, q, tp.CPUMilli)
		if !old {
			r.Lines = append(r.Lines, fmt.Sprintf("%s: not compared, started less than %v before the window", pod, Settle))
			continue
		}
		if !ok {
			r.Lines = append(r.Lines, fmt.Sprintf("%s: not compared, fewer than two kubelet samples in the window", pod))
			continue
		}
		mem := reads.mem[pod]
		r.Compared = append(r.Compared, pod)
		busy = busy || cpu >= BusyMilli
		r.Lines = append(r.Lines, fmt.Sprintf("%s: top %.0fm %.0fMi, kubelet %.1fm (%.1f–%.1fm over the views) %.1fMi", pod, tp.CPUMilli, tp.MemMiB, cpu, lo, hi, mem))
		if math.Abs(tp.CPUMilli-cpu) > cpuRel*max(cpu, tp.CPUMilli)+cpuAbsMilli {
			r.Problems = append(r.Problems, fmt.Sprintf("pod %s: cpu %.0fm in kubectl top, %.1fm from the kubelet (%.1f–%.1fm over the views): more than %.0f%% apart; kubelet samples %s",
				pod, tp.CPUMilli, cpu, lo, hi, cpuRel*100, samplesText(ctrs, q.End)))
		}
		if math.Abs(tp.MemMiB-mem) > memRel*mem+memAbsMiB {
			r.Problems = append(r.Problems, fmt.Sprintf("pod %s: memory %.0fMi in kubectl top, %.1fMi working set from the kubelet: more than %.0f%% apart", pod, tp.MemMiB, mem, memRel*100))
		}
	}
	if len(r.Compared) > 0 && !busy {
		r.Problems = append(r.Problems, fmt.Sprintf("no compared pod used %dm of CPU or more: idle pods prove nothing", BusyMilli))
	}
	return r
}

// nearestRate is the pod's CPU rate under the view of q nearest to want,
// with the lowest and highest over all views; old and ok as cpuRate's, for
// the earliest window.
func nearestRate(ctrs map[string][]Container, q Query, want float64) (cpu, lo, hi float64, old, ok bool) {
	for i, v := range q.cpuViews() {
		m, o, k := cpuRate(ctrs, v)
		if i == 0 {
			old = o
		}
		if !k {
			continue
		}
		if !ok || math.Abs(m-want) < math.Abs(cpu-want) {
			cpu = m
		}
		if !ok {
			lo, hi = m, m
		}
		lo, hi, ok = min(lo, m), max(hi, m), true
	}
	return cpu, lo, hi, old, ok
}

// samplesText lists a pod's CPU samples as "container: −12.3s 101.234, …"
// (seconds before end, cumulative CPU seconds).
func samplesText(ctrs map[string][]Container, end time.Time) string {
	var b strings.Builder
	for _, n := range slices.Sorted(maps.Keys(ctrs)) {
		fmt.Fprintf(&b, "[%s:", n)
		for _, c := range ctrs[n] {
			fmt.Fprintf(&b, " %.1fs %.3f", c.CPUAt.Sub(end).Seconds(), c.CPUSeconds)
		}
		b.WriteString("]")
	}
	return b.String()
}

// cpuRate is the pod's CPU in millicores over the view's window, summed
// over its containers: each container's rate as Prometheus' rate()
// computes it from the same samples (promRate) — the kubelet stamps its
// samples and refreshes them only every few seconds, so a window holds
// few, and rate's extrapolation matters. old says a container was counted
// Settle before the window; ok that one had two samples in it.
func cpuRate(ctrs map[string][]Container, v view) (milli float64, old, ok bool) {
	for _, samples := range ctrs {
		var in []Container
		for _, s := range samples {
			if !s.CPUAt.After(v.from) {
				old = old || !s.CPUAt.After(v.from.Add(-Settle))
				continue
			}
			if s.CPUAt.After(v.to) || s.CPUAt.After(v.seen) {
				break
			}
			in = append(in, s)
		}
		if r, found := promRate(in, v.from, v.to); found {
			milli += 1000 * r
			ok = true
		}
	}
	return milli, old, ok
}

// promRate is Prometheus' rate() of a counter over the window (from, to]
// from its samples in it: the increase between the first and the last
// (counter resets added back), extrapolated towards the window's edges by
// at most half the mean interval between samples where the gap is longer
// than 1.1 of it (and not below a zero counter at the start), over the
// window's length. false with fewer than two samples.
func promRate(in []Container, from, to time.Time) (float64, bool) {
	if len(in) < 2 {
		return 0, false
	}
	first, last := in[0], in[len(in)-1]
	increase := last.CPUSeconds - first.CPUSeconds
	for i := 1; i < len(in); i++ {
		if in[i].CPUSeconds < in[i-1].CPUSeconds {
			increase += in[i-1].CPUSeconds
		}
	}
	sampled := last.CPUAt.Sub(first.CPUAt).Seconds()
	if sampled <= 0 {
		return 0, false
	}
	toStart, toEnd := first.CPUAt.Sub(from).Seconds(), to.Sub(last.CPUAt).Seconds()
	mean := sampled / float64(len(in)-1)
	if toStart >= 1.1*mean {
		toStart = mean / 2
	}
	if increase > 0 && first.CPUSeconds >= 0 {
		toStart = min(toStart, sampled*first.CPUSeconds/increase)
	}
	if toEnd >= 1.1*mean {
		toEnd = mean / 2
	}
	increase *= (sampled + toStart + toEnd) / sampled
	return increase / to.Sub(from).Seconds(), true
}
