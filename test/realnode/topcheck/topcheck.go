// Package topcheck compares what `kubectl top pods` shows — the
// metrics.k8s.io answer of ebbflow-adapter, from Prometheus — with what the
// kubelet itself serves on /metrics/resource: CPU as the rate of the
// kubelet's cumulative counters over a window, memory as its working set.
package topcheck

import (
	"fmt"
	"math"
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

// Compare compares top, read just after the kubelet read after, with the
// kubelet: CPU against the rate of its counters from before to after,
// memory against after's working set. A pod top shows that after lacks is a
// problem (the kubelet is the source). Only pods the kubelet already had in
// settled, a read some time before before, are compared: a pod started just
// before or within the window has its start-up in the kubelet's counters and
// too few samples in Prometheus' window for the two rates to cover the same
// work.
func Compare(top map[string]Top, settled, before, after Kubelet) Result {
	var r Result
	busy := false
	pods := make([]string, 0, len(top))
	for p := range top {
		pods = append(pods, p)
	}
	sort.Strings(pods)
	for _, pod := range pods {
		tp := top[pod]
		cur, ok := after[pod]
		if !ok {
			r.Problems = append(r.Problems, fmt.Sprintf("pod %s: in kubectl top, not in the kubelet's answer", pod))
			continue
		}
		cpu, ok := cpuRate(before[pod], cur)
		if _, old := settled[pod]; !ok || !old {
			r.Lines = append(r.Lines, fmt.Sprintf("%s: not compared, started after the settled read", pod))
			continue
		}
		mem := 0.0
		for _, c := range cur {
			mem += c.MemBytes / (1 << 20)
		}
		r.Compared = append(r.Compared, pod)
		busy = busy || cpu >= BusyMilli
		r.Lines = append(r.Lines, fmt.Sprintf("%s: top %.0fm %.0fMi, kubelet %.1fm %.1fMi", pod, tp.CPUMilli, tp.MemMiB, cpu, mem))
		if math.Abs(tp.CPUMilli-cpu) > cpuRel*max(cpu, tp.CPUMilli)+cpuAbsMilli {
			r.Problems = append(r.Problems, fmt.Sprintf("pod %s: cpu %.0fm in kubectl top, %.1fm from the kubelet: more than %.0f%% apart", pod, tp.CPUMilli, cpu, cpuRel*100))
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

// cpuRate is the pod's CPU in millicores from before to after, summed over
// the containers both reads have; false when none has advanced in time.
func cpuRate(before, after map[string]Container) (float64, bool) {
	milli, ok := 0.0, false
	for name, a := range after {
		b, found := before[name]
		if !found {
			continue
		}
		dt := a.CPUAt.Sub(b.CPUAt).Seconds()
		if dt <= 0 {
			continue
		}
		milli += 1000 * (a.CPUSeconds - b.CPUSeconds) / dt
		ok = true
	}
	return milli, ok
}
