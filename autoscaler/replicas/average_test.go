package replicas

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestPodAverage(t *testing.T) {
	tol01 := &Tolerances{ScaleDown: DefaultTolerance, ScaleUp: .01}
	cases := []struct {
		name     string
		current  int32
		pods     podSpec
		samples  Samples
		resource corev1.ResourceName
		target   int64
		tol      *Tolerances

		wantReplicas int32
		wantUsage    int64
		wantReason   Reason
		wantErr      string
	}{
		// Upstream TestReplicaCalcPodMetric.
		{name: "scale up", current: 3, samples: samples(20000, 10000, 30000), target: 15000,
			wantReplicas: 4, wantUsage: 20000, wantReason: ReasonProportional},
		{name: "scale up: unready hot-CPU pod scales less", current: 3,
			pods:    podSpec{ready: statuses(condTrue, condTrue, condFalse), start: []time.Time{cool(), cool(), hot()}},
			samples: samples(50000, 10000, 30000), target: 15000, wantReplicas: 6, wantUsage: 30000},
		{name: "scale up: unready hot-CPU pods avoid scale-down", current: 3,
			pods:    podSpec{ready: statuses(condFalse, condTrue, condFalse), start: []time.Time{hot(), cool(), hot()}},
			samples: samples(50000, 15000, 30000), target: 15000, wantReplicas: 7, wantUsage: 31666},
		{name: "scale down", current: 5, samples: samples(12000, 12000, 12000, 12000, 12000), target: 20000,
			wantReplicas: 3, wantUsage: 12000},
		{name: "within default tolerance", current: 3, samples: samples(20000, 21000, 21000), target: 20000,
			wantReplicas: 3, wantUsage: 20666, wantReason: ReasonWithinTolerance},
		{name: "outside configurable 1% tolerance", current: 3, tol: tol01, samples: samples(20000, 21000, 21000), target: 20000,
			wantReplicas: 4, wantUsage: 20666},
		{name: "no change: missing metrics", current: 5, samples: samples(20000, 19000, 21000), target: 20000,
			wantReplicas: 5, wantUsage: 20000, wantReason: ReasonRecomputedWithinTolerance},
		{name: "rolling update with maxSurge: extra pod missing metric", current: 2,
			pods:    podSpec{phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning}},
			samples: samples(10000, 10000), target: 17000, wantReplicas: 2, wantUsage: 10000, wantReason: ReasonRecomputedCountFlip},
		// Missing pods count at exactly the target on a scale-down:
		// 4 pods, samples 5000,5000 vs 10000 → 0.5; recomputed (5000+5000+10000+10000)/4 = 7500 → 0.75 → ceil(3) = 3.
		{name: "missing pods count at target on scale-down", current: 4, samples: samples(5000, 5000), target: 10000,
			wantReplicas: 3, wantUsage: 5000, wantReason: ReasonRecomputed},
		// Missing pods count at zero on a scale-up: 30000,30000 vs 10000 → 3;
		// recomputed 60000/4 = 15000 → 1.5 → ceil(6) = 6.
		{name: "missing pods count at zero on scale-up", current: 4, samples: samples(30000, 30000), target: 10000,
			wantReplicas: 6, wantUsage: 30000, wantReason: ReasonRecomputed},
		// Pending pods are unready for every metric, not only cpu.
		{name: "pending pods count at zero on scale-up", current: 3,
			pods:    podSpec{phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodPending}},
			samples: samples(30000, 30000), target: 10000, wantReplicas: 6, wantUsage: 30000, wantReason: ReasonRecomputed},
		// Resource metric with an AverageValue target: cpu readiness applies, so
		// the unready pod counts at zero: 1000/3 = 333 → 1.33 → ceil(4).
		{name: "cpu average value ignores unready pod", current: 3, resource: corev1.ResourceCPU,
			pods:    podSpec{ready: statuses(condFalse, condTrue, condTrue)},
			samples: samples(100, 500, 500), target: 250, wantReplicas: 4, wantUsage: 500, wantReason: ReasonRecomputed},
		{name: "memory average value counts unready pod", current: 3, resource: corev1.ResourceMemory,
			pods:    podSpec{ready: statuses(condFalse, condTrue, condTrue)},
			samples: samples(100, 500, 600), target: 200, wantReplicas: 6, wantUsage: 400, wantReason: ReasonProportional},
		{name: "zero target", current: 1, samples: samples(1), target: 0, wantErr: ErrInvalidTarget.Error()},
		{name: "no pods", current: 0, samples: samples(1), target: 1, wantErr: ErrNoPods.Error()},
		{name: "only ignored pods", current: 1, pods: podSpec{deleting: []bool{true}}, samples: samples(1), target: 1,
			wantErr: ErrNoUsableMetrics.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tol := UniformTolerances(DefaultTolerance)
			if tc.tol != nil {
				tol = *tc.tol
			}
			pods := tc.pods
			if pods.n == 0 {
				pods.n = int(tc.current)
			}
			got, err := PodAverage(AverageInput{
				CurrentReplicas: tc.current, TargetAverage: tc.target, Resource: tc.resource, Tolerances: tol,
				Pods: pods.build(), Samples: tc.samples, Timing: testTiming(), Timestamp: testNow(),
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tc.wantReplicas || got.Value != tc.wantUsage {
				t.Errorf("got replicas=%d usage=%d, want %d %d", got.Replicas, got.Value, tc.wantReplicas, tc.wantUsage)
			}
			if tc.wantReason != "" && got.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", got.Reason, tc.wantReason)
			}
			if !got.Timestamp.Equal(testNow()) {
				t.Errorf("timestamp = %v, want %v", got.Timestamp, testNow())
			}
		})
	}
}
