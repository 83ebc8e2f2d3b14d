package replicas

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

type utilizationCase struct {
	name      string
	current   int32
	pods      podSpec
	samples   Samples
	container string
	target    int32
	tol       *Tolerances

	wantReplicas    int32
	wantUtilization int32
	wantRaw         int64
	wantReason      Reason
	wantErr         string
}

func runUtilizationCases(t *testing.T, cases []utilizationCase) {
	t.Helper()
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
			got, err := ResourceUtilization(UtilizationInput{
				CurrentReplicas:   tc.current,
				TargetUtilization: tc.target,
				Resource:          corev1.ResourceCPU,
				Container:         tc.container,
				Tolerances:        tol,
				Pods:              pods.build(),
				Samples:           tc.samples,
				Timing:            testTiming(),
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got.Replicas != tc.wantReplicas || got.Utilization != tc.wantUtilization || got.Value != tc.wantRaw {
				t.Errorf("got replicas=%d utilization=%d raw=%d, want %d %d %d",
					got.Replicas, got.Utilization, got.Value, tc.wantReplicas, tc.wantUtilization, tc.wantRaw)
			}
			if tc.wantReason != "" && got.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", got.Reason, tc.wantReason)
			}
		})
	}
}

// Cases from upstream TestReplicaCalcResourceScale.
func TestResourceUtilizationScale(t *testing.T) {
	failed := []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed}
	running4 := []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning}
	pending := []corev1.PodPhase{corev1.PodRunning, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending}
	failed7 := []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, corev1.PodFailed}
	ready7 := statuses(condTrue, condTrue, condTrue, condTrue, condTrue, condFalse, condFalse)
	runUtilizationCases(t, []utilizationCase{
		{name: "scale up", current: 3, pods: podSpec{cpu: repeat(3, "1.0")}, samples: samples(twice(300, 500, 700)...),
			target: 30, wantReplicas: 5, wantUtilization: 50, wantRaw: 1000, wantReason: ReasonProportional},
		{name: "scale up: container metric", current: 3, container: "container2", pods: podSpec{cpu: repeat(3, "1.0")},
			samples: samples(300, 500, 700), target: 30, wantReplicas: 5, wantUtilization: 50, wantRaw: 500},
		{name: "scale up: unready pod scales less", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condFalse, condTrue, condTrue)},
			samples: samples(twice(300, 500, 700)...), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 1200, wantReason: ReasonRecomputed},
		{name: "scale up: hot-CPU container scales less", current: 3, container: "container2",
			pods:    podSpec{cpu: repeat(3, "1.0"), start: []time.Time{hot(), cool(), cool()}},
			samples: samples(300, 500, 700), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 600},
		{name: "scale up: hot-CPU pod scales less", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), start: []time.Time{hot(), cool(), cool()}},
			samples: samples(twice(300, 500, 700)...), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 1200},
		{name: "no scale: unready pods ignored", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condTrue, condFalse, condFalse)},
			samples: samples(twice(400, 500, 700)...), target: 30, wantReplicas: 3, wantUtilization: 40, wantRaw: 800, wantReason: ReasonRecomputedDirectionFlip},
		{name: "no scale: hot-CPU pods ignored", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condTrue, condFalse, condFalse), start: []time.Time{cool(), hot(), hot()}},
			samples: samples(twice(400, 500, 700)...), target: 30, wantReplicas: 3, wantUtilization: 40, wantRaw: 800},
		{name: "scale up: failed pods ignored", current: 2,
			pods:    podSpec{cpu: repeat(4, "1.0"), ready: statuses(condTrue, condTrue, condFalse, condFalse), phase: failed},
			samples: samples(twice(500, 700)...), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 1200},
		{name: "scale up: container metrics with failed pods ignored", current: 2, container: "container2",
			pods:    podSpec{cpu: repeat(4, "1.0"), ready: statuses(condTrue, condTrue, condFalse, condFalse), phase: failed},
			samples: samples(500, 700), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 600},
		{name: "scale up: pods being deleted are ignored", current: 2,
			pods: podSpec{cpu: repeat(4, "1.0"), ready: statuses(condTrue, condTrue, condFalse, condFalse), phase: running4,
				deleting: []bool{false, false, true, true}},
			samples: samples(twice(500, 700)...), target: 30, wantReplicas: 4, wantUtilization: 60, wantRaw: 1200},
		{name: "scale down", current: 5, pods: podSpec{cpu: repeat(5, "1.0")},
			samples: samples(twice(100, 300, 500, 250, 250)...), target: 50, wantReplicas: 3, wantUtilization: 28, wantRaw: 560},
		{name: "scale down: container metric", current: 5, container: "container2", pods: podSpec{cpu: repeat(5, "1.0")},
			samples: samples(100, 300, 500, 250, 250), target: 50, wantReplicas: 3, wantUtilization: 28, wantRaw: 280},
		{name: "scale down: exclude unready pods", current: 5,
			pods:    podSpec{cpu: repeat(5, "1.0"), ready: statuses(condTrue, condTrue, condTrue, condFalse, condFalse)},
			samples: samples(twice(100, 300, 500, 250, 250)...), target: 50, wantReplicas: 2, wantUtilization: 30, wantRaw: 600},
		{name: "scale down: exclude unscheduled pods", current: 5,
			pods:    podSpec{cpu: repeat(5, "1.0"), ready: statuses(condTrue, condFalse, condFalse, condFalse, condFalse), phase: pending},
			samples: samples(twice(100)...), target: 50, wantReplicas: 1, wantUtilization: 10, wantRaw: 200},
		{name: "scale down: container metric excludes unscheduled pods", current: 5, container: "container2",
			pods:    podSpec{cpu: repeat(5, "1.0"), ready: statuses(condTrue, condFalse, condFalse, condFalse, condFalse), phase: pending},
			samples: samples(100, 300, 500, 250, 250), target: 50, wantReplicas: 1, wantUtilization: 10, wantRaw: 100},
		{name: "scale down: ignore hot-CPU pods", current: 5,
			pods:    podSpec{cpu: repeat(5, "1.0"), start: []time.Time{cool(), cool(), cool(), hot(), hot()}},
			samples: samples(twice(100, 300, 500, 250, 250)...), target: 50, wantReplicas: 2, wantUtilization: 30, wantRaw: 600},
		{name: "scale down: failed pods ignored", current: 5,
			pods:    podSpec{cpu: repeat(7, "1.0"), ready: ready7, phase: failed7},
			samples: samples(twice(100, 300, 500, 250, 250)...), target: 50, wantReplicas: 3, wantUtilization: 28, wantRaw: 560},
		{name: "scale down: still-running pods being deleted are ignored", current: 5, container: "container2",
			pods: podSpec{cpu: repeat(7, "1.0"), ready: ready7, phase: append(running4, corev1.PodRunning, corev1.PodRunning, corev1.PodRunning),
				deleting: []bool{false, false, false, false, false, true, true}},
			samples: samples(100, 300, 500, 250, 250), target: 50, wantReplicas: 3, wantUtilization: 28, wantRaw: 280},
	})
}

// Cases from upstream TestReplicaCalcResourceTolerance, plus per-direction edges.
func TestResourceUtilizationTolerance(t *testing.T) {
	mixed := []string{"0.9", "1.0", "1.1"}
	tol := func(down, up float64) *Tolerances { return &Tolerances{ScaleDown: down, ScaleUp: up} }
	runUtilizationCases(t, []utilizationCase{
		{name: "within default tolerance", current: 3, pods: podSpec{cpu: mixed},
			samples: samples(twice(1010, 1030, 1020)...), target: 100, wantReplicas: 3, wantUtilization: 102, wantRaw: 2040, wantReason: ReasonWithinTolerance},
		{name: "outside 0% tolerance", current: 3, tol: tol(0, 0), pods: podSpec{cpu: mixed},
			samples: samples(twice(909, 1010, 1111)...), target: 100, wantReplicas: 4, wantUtilization: 101, wantRaw: 2020},
		{name: "within 200% scale-up tolerance", current: 3, tol: tol(DefaultTolerance, 2), pods: podSpec{cpu: mixed},
			samples: samples(twice(1890, 1910, 1900)...), target: 100, wantReplicas: 3, wantUtilization: 190, wantRaw: 3800},
		{name: "outside 8% scale-up tolerance (superfluous scale-down tolerance)", current: 3, tol: tol(2, .08), pods: podSpec{cpu: mixed},
			samples: samples(twice(1100, 1080, 1090)...), target: 100, wantReplicas: 4, wantUtilization: 109, wantRaw: 2180},
		{name: "within 36% scale-down tolerance", current: 3, tol: tol(.36, DefaultTolerance), pods: podSpec{cpu: mixed},
			samples: samples(twice(660, 640, 650)...), target: 100, wantReplicas: 3, wantUtilization: 65, wantRaw: 1300},
		{name: "outside 34% scale-down tolerance", current: 3, tol: tol(.34, DefaultTolerance), pods: podSpec{cpu: mixed},
			samples: samples(twice(660, 640, 650)...), target: 100, wantReplicas: 2, wantUtilization: 65, wantRaw: 1300},
		// Edges: the band is closed; 110% with a 10% scale-up tolerance keeps.
		{name: "ratio exactly at scale-up edge keeps", current: 4, pods: podSpec{cpu: repeat(4, "1.0")},
			samples: samples(twice(1100, 1100, 1100, 1100)...), target: 100, wantReplicas: 4, wantUtilization: 110, wantRaw: 2200, wantReason: ReasonWithinTolerance},
		{name: "ratio exactly at scale-down edge keeps", current: 4, tol: tol(.25, 0), pods: podSpec{cpu: repeat(4, "1.0")},
			samples: samples(twice(750, 750, 750, 750)...), target: 100, wantReplicas: 4, wantUtilization: 75, wantRaw: 1500, wantReason: ReasonWithinTolerance},
		{name: "scale-up tolerance does not widen the scale-down side", current: 4, tol: tol(0, 5), pods: podSpec{cpu: repeat(4, "1.0")},
			samples: samples(twice(990, 990, 990, 990)...), target: 100, wantReplicas: 4, wantUtilization: 99, wantRaw: 1980, wantReason: ReasonProportional},
	})
}

// Cases from upstream TestReplicaCalcResourceMissingMetrics.
func TestResourceUtilizationMissingMetrics(t *testing.T) {
	superfluous := samples(twice(4000, 9500, 3000, 7000, 3200, 2000)...)
	disjoint := Samples{"an-older-pod-name": {Value: 200, Window: time.Minute}}
	runUtilizationCases(t, []utilizationCase{
		{name: "superfluous metrics counted", current: 4, pods: podSpec{cpu: repeat(4, "1.0")}, samples: superfluous,
			target: 100, wantReplicas: 24, wantUtilization: 587, wantRaw: 11750},
		{name: "some pods missing metrics scales down", current: 4, pods: podSpec{cpu: repeat(4, "1.0")},
			samples: samples(twice(400, 95)...), target: 100, wantReplicas: 3, wantUtilization: 24, wantRaw: 495, wantReason: ReasonRecomputed},
		{name: "no change: metric equal to target", current: 2, pods: podSpec{cpu: repeat(2, "1.0")},
			samples: samples(twice(1000)...), target: 100, wantReplicas: 2, wantUtilization: 100, wantRaw: 2000},
		{name: "no change: metric above target", current: 2, pods: podSpec{cpu: repeat(2, "1.0")},
			samples: samples(twice(1900)...), target: 100, wantReplicas: 2, wantUtilization: 190, wantRaw: 3800, wantReason: ReasonRecomputedWithinTolerance},
		{name: "no change: metric below target", current: 2, pods: podSpec{cpu: repeat(2, "1.0")},
			samples: samples(twice(600)...), target: 100, wantReplicas: 2, wantUtilization: 60, wantRaw: 1200, wantReason: ReasonRecomputed},
		{name: "no change: unready pod metric missing", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condFalse, condTrue, condTrue)},
			samples: samples(twice(100, 450)...), target: 50, wantReplicas: 3, wantUtilization: 45, wantRaw: 900},
		{name: "no change: hot-CPU pod metric missing", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), start: []time.Time{hot(), cool(), cool()}},
			samples: samples(twice(100, 450)...), target: 50, wantReplicas: 3, wantUtilization: 45, wantRaw: 900},
		{name: "scale up: unready pod metric missing", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condFalse, condTrue, condTrue)},
			samples: samples(twice(100, 2000)...), target: 50, wantReplicas: 4, wantUtilization: 200, wantRaw: 4000},
		{name: "scale up: hot-CPU pod metric missing", current: 3,
			pods:    podSpec{cpu: repeat(3, "1.0"), ready: statuses(condFalse, condTrue, condTrue), start: []time.Time{hot(), cool(), cool()}},
			samples: samples(twice(100, 2000)...), target: 50, wantReplicas: 4, wantUtilization: 200, wantRaw: 4000},
		{name: "scale down: unready pod metric missing", current: 4,
			pods:    podSpec{cpu: repeat(4, "1.0"), ready: statuses(condFalse, condTrue, condTrue, condTrue)},
			samples: samples(twice(100, 100, 100)...), target: 50, wantReplicas: 3, wantUtilization: 10, wantRaw: 200},
		{name: "scale down: target over 100", current: 4,
			pods:    podSpec{cpu: []string{"1.0", "1.0", "2.0", "2.0"}, ready: statuses(condFalse, condTrue, condTrue, condTrue)},
			samples: samples(twice(200, 100, 100)...), target: 300, wantReplicas: 2, wantUtilization: 6, wantRaw: 200},
		{name: "rolling update with maxSurge: extra pod missing metric", current: 2,
			pods:    podSpec{cpu: repeat(3, "1.0"), phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodRunning}},
			samples: samples(twice(100, 100)...), target: 50, wantReplicas: 2, wantUtilization: 10, wantRaw: 200, wantReason: ReasonRecomputedCountFlip},
		{name: "disjoint pod and metric names", current: 1, pods: podSpec{cpu: repeat(1, "1.0")}, samples: disjoint,
			target: 100, wantErr: ErrNoMatchingMetrics.Error()},
		// Upstream's "no metrics returned from metrics API" fails in the metrics
		// client; here an empty sample set leaves every pod missing.
		{name: "no samples at all", current: 4, pods: podSpec{cpu: repeat(4, "1.0")}, samples: Samples{},
			target: 100, wantErr: ErrNoUsableMetrics.Error()},
		{name: "missing CPU request on container", current: 1, samples: samples(twice(200)...),
			target: 100, wantErr: "missing request for cpu in container container1 of Pod test-pod-0"},
		{name: "no pods", current: 0, samples: samples(100), target: 100, wantErr: ErrNoPods.Error()},
		{name: "zero target", current: 1, pods: podSpec{cpu: repeat(1, "1.0")}, samples: samples(100), target: 0, wantErr: ErrInvalidTarget.Error()},
		{name: "all pods unready", current: 2, pods: podSpec{cpu: repeat(2, "1.0"), ready: statuses(condFalse, condFalse)},
			samples: samples(100, 100), target: 50, wantErr: ErrNoUsableMetrics.Error()},
	})
}

// Upstream TestReplicaCalcComputedToleranceAlgImplementation: a target
// calibrated just past the tolerance scales down; one just inside does not.
func TestResourceUtilizationComputedTolerance(t *testing.T) {
	const startPods = 10
	used := int64(startPods * 150)
	requested := 2 * used
	perPod := requested / startPods
	jitter := []int64{100, -100, 10, -10, 2, -2, 1, -1, 0, 0}
	cpu := make([]string, startPods)
	levels := make([]int64, startPods)
	for i := range cpu {
		cpu[i] = fmt.Sprintf("%dm", perPod+jitter[i])
		levels[i] = used / 10
	}
	requestedToUsed := float64(requested / used)
	for _, tc := range []struct {
		name   string
		offset float64
		want   func(target float64) int32
	}{
		{"just past tolerance scales down", .01, func(target float64) int32 {
			return int32(math.Ceil(float64(used) / (float64(requested) * target) * startPods))
		}},
		{"just inside tolerance keeps", .004, func(float64) int32 { return startPods }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := math.Abs(1/(requestedToUsed*(1-DefaultTolerance))) + tc.offset
			got, err := ResourceUtilization(UtilizationInput{
				CurrentReplicas: startPods, TargetUtilization: int32(target * 100), Resource: corev1.ResourceCPU,
				Tolerances: UniformTolerances(DefaultTolerance), Pods: podSpec{n: startPods, cpu: cpu}.build(),
				Samples: samples(twice(levels...)...), Timing: testTiming(),
			})
			if err != nil {
				t.Fatal(err)
			}
			wantUtil := int32(used * 100 / requested)
			if got.Replicas != tc.want(target) || got.Utilization != wantUtil || got.Value != 2*used/10 {
				t.Errorf("got %d/%d/%d, want %d/%d/%d", got.Replicas, got.Utilization, got.Value, tc.want(target), wantUtil, 2*used/10)
			}
		})
	}
}

func TestResourceUtilizationDoesNotMutateSamples(t *testing.T) {
	s := samples(twice(100, 100)...)
	_, err := ResourceUtilization(UtilizationInput{
		CurrentReplicas: 3, TargetUtilization: 50, Resource: corev1.ResourceCPU,
		Tolerances: UniformTolerances(DefaultTolerance), Pods: podSpec{n: 3, cpu: repeat(3, "1.0")}.build(),
		Samples: s, Timing: testTiming(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 {
		t.Errorf("samples were modified: %v", s)
	}
}

func TestResourceUtilizationExplains(t *testing.T) {
	got, err := ResourceUtilization(UtilizationInput{
		CurrentReplicas: 4, TargetUtilization: 50, Resource: corev1.ResourceCPU,
		Tolerances: UniformTolerances(DefaultTolerance),
		Pods: podSpec{n: 5, cpu: repeat(5, "1.0"), ready: statuses(condTrue, condTrue, condFalse, condTrue, condTrue),
			deleting: []bool{false, false, false, false, true}}.build(),
		Samples: samples(twice(1500, 1500, 1500)...), Timing: testTiming(),
	})
	if err != nil {
		t.Fatal(err)
	}
	g := got.Groups
	if g == nil || g.Counted != 2 || len(g.Unready) != 1 || len(g.Missing) != 1 || len(g.Ignored) != 1 {
		t.Fatalf("groups = %+v", g)
	}
	// 150% of request against a 50% target: ratio 3 > 1 with unready and
	// missing pods, both counted at 0%: 6000/8000 = 75% → 1.5 → ceil(1.5×4) = 6.
	if !got.Recomputed || got.CountedPods != 4 || got.Replicas != 6 || got.Reason != ReasonRecomputed || got.RecomputedRatio != 1.5 {
		t.Errorf("got %+v", got)
	}
	if got.Reason.Describe() == string(got.Reason) {
		t.Errorf("reason %q has no description", got.Reason)
	}
}
