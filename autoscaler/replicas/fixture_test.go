package replicas

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The fixtures mirror upstream's replica_calculator_test.go: pods named
// test-pod-N with two containers, Running and Ready unless told otherwise,
// started at the zero time unless told otherwise, and samples taken at the
// zero time over a one-minute window. Upstream's testing durations are used:
// 2m cpu initialization period, 10s initial readiness delay.

func testNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

// hot is a start time inside the cpu initialization period.
func hot() time.Time { return testNow() }

// cool is a start time past the cpu initialization period.
func cool() time.Time { return testNow().Add(-3 * time.Minute) }

func testTiming() PodTiming {
	return PodTiming{CPUInitializationPeriod: 2 * time.Minute, InitialReadinessDelay: 10 * time.Second, Now: testNow()}
}

func podName(i int) string { return fmt.Sprintf("test-pod-%d", i) }

// podSpec describes a list of pods by index.
type podSpec struct {
	n        int
	cpu      []string // per-container cpu request of pod i; none past the end
	ready    []corev1.ConditionStatus
	start    []time.Time
	phase    []corev1.PodPhase
	deleting []bool
}

func (s podSpec) build() []Pod {
	n := max(s.n, len(s.phase))
	pods := make([]Pod, 0, n)
	for i := range n {
		p := Pod{
			Name:       podName(i),
			Phase:      corev1.PodRunning,
			Ready:      &ReadyCondition{Status: corev1.ConditionTrue},
			StartTime:  new(time.Time),
			Containers: []Container{{Name: "container1"}, {Name: "container2"}},
		}
		if i < len(s.ready) {
			p.Ready.Status = s.ready[i]
		}
		if i < len(s.start) {
			*p.StartTime = s.start[i]
		}
		if i < len(s.phase) {
			p.Phase = s.phase[i]
		}
		if i < len(s.deleting) {
			p.Deleting = s.deleting[i]
		}
		if i < len(s.cpu) {
			req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu[i])}
			p.Containers[0].Requests = req
			p.Containers[1].Requests = req
		}
		pods = append(pods, p)
	}
	return pods
}

func repeat(n int, v string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// samples gives pod i the value values[i], taken at the zero time over one
// minute, like upstream's fake metrics clients.
func samples(values ...int64) Samples {
	out := make(Samples, len(values))
	for i, v := range values {
		out[podName(i)] = Sample{Value: v, Window: time.Minute}
	}
	return out
}

// twice mimics makePodMetricLevels: both containers report v, the pod sum is 2v.
func twice(values ...int64) []int64 {
	out := make([]int64, len(values))
	for i, v := range values {
		out[i] = 2 * v
	}
	return out
}

func statuses(s ...corev1.ConditionStatus) []corev1.ConditionStatus { return s }

const (
	condTrue  = corev1.ConditionTrue
	condFalse = corev1.ConditionFalse
)
