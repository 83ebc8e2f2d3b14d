package replicas

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Cases from upstream TestGroupPods (2m cpu initialization period, 10s
// initial readiness delay), plus the boundaries of both periods.
func TestGroupPods(t *testing.T) {
	now := testNow()
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	ready := func(s corev1.ConditionStatus, ago time.Duration) *ReadyCondition {
		return &ReadyCondition{Status: s, LastTransitionTime: now.Add(-ago)}
	}
	sample := func(ago, window time.Duration) Sample {
		return Sample{Value: 1, Timestamp: now.Add(-ago), Window: window}
	}
	succeeded := corev1.PodSucceeded
	cases := []struct {
		name     string
		pods     []Pod
		samples  Samples
		resource corev1.ResourceName

		counted                   int
		unready, missing, ignored []string
	}{
		{name: "void", resource: corev1.ResourceCPU},
		{name: "count in a ready pod - memory", resource: corev1.ResourceMemory,
			pods:    []Pod{{Name: "bentham", Phase: succeeded}},
			samples: Samples{"bentham": sample(0, time.Minute)}, counted: 1},
		{name: "unready a pod without ready condition - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "lucretius", Phase: succeeded, StartTime: at(0)}},
			samples: Samples{"lucretius": {Value: 1}}, unready: []string{"lucretius"}},
		{name: "count in a ready pod with fresh metrics during initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "bentham", Phase: succeeded, StartTime: at(-time.Minute), Ready: ready(condTrue, 30*time.Second)}},
			samples: Samples{"bentham": sample(0, 30*time.Second)}, counted: 1},
		{name: "unready a ready pod without fresh metrics during initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "bentham", Phase: succeeded, StartTime: at(-time.Minute), Ready: ready(condTrue, 30*time.Second)}},
			samples: Samples{"bentham": sample(0, time.Minute)}, unready: []string{"bentham"}},
		{name: "unready an unready pod during initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "lucretius", Phase: succeeded, StartTime: at(-10 * time.Minute), Ready: ready(condFalse, 9*time.Minute+54*time.Second)}},
			samples: Samples{"lucretius": {Value: 1}}, unready: []string{"lucretius"}},
		{name: "count in a ready pod without fresh metrics after initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "bentham", Phase: succeeded, StartTime: at(-3 * time.Minute), Ready: ready(condTrue, 3*time.Minute)}},
			samples: Samples{"bentham": sample(2*time.Minute, time.Minute)}, counted: 1},
		{name: "count in an unready pod that was ready after initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "lucretius", Phase: succeeded, StartTime: at(-10 * time.Minute), Ready: ready(condFalse, 9*time.Minute)}},
			samples: Samples{"lucretius": {Value: 1}}, counted: 1},
		{name: "unready pod that has never been ready after initialization period - CPU", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "lucretius", Phase: succeeded, StartTime: at(-10 * time.Minute), Ready: ready(condFalse, 9*time.Minute+50*time.Second)}},
			samples: Samples{"lucretius": {Value: 1}}, counted: 1},
		{name: "a missing pod", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "epicurus", Phase: succeeded, StartTime: at(-3 * time.Minute)}}, missing: []string{"epicurus"}},
		{name: "several pods", resource: corev1.ResourceCPU,
			pods: []Pod{
				{Name: "lucretius", Phase: succeeded, StartTime: at(0)},
				{Name: "niccolo", Phase: succeeded, StartTime: at(-3 * time.Minute), Ready: ready(condTrue, 3*time.Minute)},
				{Name: "epicurus", Phase: succeeded, StartTime: at(-3 * time.Minute)},
			},
			samples: Samples{"lucretius": {Value: 1}, "niccolo": {Value: 1}},
			counted: 1, unready: []string{"lucretius"}, missing: []string{"epicurus"}},
		{name: "pending pods are unreadied", resource: corev1.ResourceCPU,
			pods: []Pod{{Name: "unscheduled", Phase: corev1.PodPending}}, unready: []string{"unscheduled"}},
		{name: "ignore pods with deletion timestamps", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "deleted", Phase: corev1.PodPending, Deleting: true}},
			samples: Samples{"deleted": {Value: 1}}, ignored: []string{"deleted"}},
		{name: "ignore pods in a failed state", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "failed", Phase: corev1.PodFailed}},
			samples: Samples{"failed": {Value: 1}}, ignored: []string{"failed"}},
		// Boundaries. Started exactly one initialization period ago: no longer
		// within it (start+period is not after now).
		{name: "initialization period boundary is exclusive", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "edge", Phase: corev1.PodRunning, StartTime: at(-2 * time.Minute), Ready: ready(condTrue, time.Second)}},
			samples: Samples{"edge": sample(0, time.Minute)}, counted: 1},
		// A sample taken exactly one window after the readiness change is trusted.
		{name: "sample exactly one window after readiness is trusted", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "edge", Phase: corev1.PodRunning, StartTime: at(-time.Minute), Ready: ready(condTrue, 30*time.Second)}},
			samples: Samples{"edge": sample(0, 30*time.Second)}, counted: 1},
		// Readiness changed exactly at start + delay: not "never ready".
		{name: "readiness delay boundary is exclusive", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "edge", Phase: corev1.PodRunning, StartTime: at(-10 * time.Minute), Ready: ready(condFalse, 10*time.Minute-10*time.Second)}},
			samples: Samples{"edge": {Value: 1}}, counted: 1},
		{name: "unknown readiness during initialization with fresh sample counts", resource: corev1.ResourceCPU,
			pods:    []Pod{{Name: "u", Phase: corev1.PodRunning, StartTime: at(-time.Minute), Ready: ready(corev1.ConditionUnknown, 2*time.Minute)}},
			samples: Samples{"u": sample(0, time.Minute)}, counted: 1},
		{name: "pods metrics skip cpu readiness", resource: "",
			pods:    []Pod{{Name: "p", Phase: corev1.PodRunning}},
			samples: Samples{"p": {Value: 1}}, counted: 1},
	}
	timing := testTiming()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := GroupPods(tc.pods, tc.samples, tc.resource, timing)
			if g.Counted != tc.counted || !slices.Equal(g.Unready, tc.unready) ||
				!slices.Equal(g.Missing, tc.missing) || !slices.Equal(g.Ignored, tc.ignored) {
				t.Errorf("got counted=%d unready=%v missing=%v ignored=%v, want %d %v %v %v",
					g.Counted, g.Unready, g.Missing, g.Ignored, tc.counted, tc.unready, tc.missing, tc.ignored)
			}
			if len(g.Verdicts) != len(tc.pods) {
				t.Fatalf("got %d verdicts for %d pods", len(g.Verdicts), len(tc.pods))
			}
			for i, v := range g.Verdicts {
				if v.Name != tc.pods[i].Name || v.Reason == "" {
					t.Errorf("verdict %d = %+v", i, v)
				}
			}
		})
	}
}
