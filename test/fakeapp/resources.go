package fakeapp

import (
	"errors"
	"maps"
)

// Names of the cAdvisor-shaped series (as the kubelet's /metrics/resource endpoint
// serves them) that a Service with Usage publishes for metrics.k8s.io.
const (
	CPUUsageMetric    = "container_cpu_usage_seconds_total"
	MemoryUsageMetric = "container_memory_working_set_bytes"
)

// Usage is what each pod of a Service uses, published per pod as
// container_cpu_usage_seconds_total{namespace,pod,container} (a counter of cpu
// seconds) and container_memory_working_set_bytes (a gauge), so resourceRules can
// serve `kubectl top` and cpu-based autoscaling for kwok pods, which have no kubelet.
type Usage struct {
	// Container is the container label; default "app".
	Container string
	// IdleCores is a pod's cpu without traffic; CoresPerRequest is added for every
	// request per second a Ready pod serves. Pods that are present but not Ready
	// use IdleCores.
	IdleCores, CoresPerRequest float64
	// MemoryBytes is every pod's working set.
	MemoryBytes float64
}

// CPUCores is the cpu of one pod serving perPod requests per second.
func (u Usage) CPUCores(perPod float64) float64 {
	return max(u.IdleCores, 0) + max(u.CoresPerRequest, 0)*max(perPod, 0)
}

func (u Usage) validate() error {
	if u.IdleCores < 0 || u.CoresPerRequest < 0 || u.MemoryBytes < 0 {
		return errors.New("usage: cores and memory must not be negative")
	}
	return nil
}

func usageLabels(s Service, pod string) map[string]string {
	c := s.Usage.Container
	if c == "" {
		c = "app"
	}
	return map[string]string{"namespace": s.Namespace, "pod": pod, "container": c}
}

// stepUsage advances the usage series of every present pod (Ready ones at the
// per-pod rate, the others idle) and removes those of pods that are gone. It keeps
// the set of pods with series in st.usage.
func (s *App) stepUsage(st *serviceState, ready []string, present map[string]bool, perPod float64, dt float64) {
	u := st.spec.Usage
	if u == nil {
		return
	}
	isReady := make(map[string]bool, len(ready))
	for _, p := range ready {
		isReady[p] = true
	}
	for pod := range present {
		rate := u.CPUCores(0)
		if isReady[pod] {
			rate = u.CPUCores(perPod)
		}
		l := usageLabels(st.spec, pod)
		s.cfg.Sink.AddCounter(CPUUsageMetric, l, rate*max(dt, 0))
		s.cfg.Sink.SetGauge(MemoryUsageMetric, l, u.MemoryBytes)
	}
	for pod := range maps.Clone(st.usage) {
		if !present[pod] {
			s.deleteUsage(st, pod)
		}
	}
	for pod := range present {
		st.usage[pod] = true
	}
}

func (s *App) deleteUsage(st *serviceState, pod string) {
	l := usageLabels(st.spec, pod)
	s.cfg.Sink.Delete(CPUUsageMetric, l)
	s.cfg.Sink.Delete(MemoryUsageMetric, l)
	delete(st.usage, pod)
}
