package replicas

import (
	"errors"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestObjectValue(t *testing.T) {
	tol01 := Tolerances{ScaleDown: DefaultTolerance, ScaleUp: .01}
	def := UniformTolerances(DefaultTolerance)
	cases := []struct {
		name    string
		current int32
		pods    podSpec
		value   int64
		target  int64
		tol     Tolerances

		wantReplicas int32
		wantReason   Reason
		wantErr      error
	}{
		// Upstream TestReplicaCalcObjectMetric.
		{name: "scale up", current: 3, value: 20000, target: 15000, tol: def, wantReplicas: 4, wantReason: ReasonProportional},
		{name: "scale up: very large metric saturates replicas to MaxInt32", current: 3, value: math.MaxInt64, target: 1, tol: def,
			wantReplicas: math.MaxInt32, wantReason: ReasonProportional},
		{name: "scale up: ignores unready pods", current: 3, pods: podSpec{ready: statuses(condFalse, condTrue, condFalse)},
			value: 50000, target: 10000, tol: def, wantReplicas: 5},
		{name: "scale down", current: 5, value: 12000, target: 20000, tol: def, wantReplicas: 3},
		{name: "within default tolerance", current: 3, value: 20666, target: 20000, tol: def, wantReplicas: 3, wantReason: ReasonWithinTolerance},
		{name: "outside configurable 1% tolerance", current: 3, value: 20666, target: 20000, tol: tol01, wantReplicas: 4},
		// minReplicas 0: from zero replicas the proposal is ceil(ratio), no tolerance.
		{name: "from zero: below target proposes one", current: 0, value: 10000, target: 15000, tol: def, wantReplicas: 1, wantReason: ReasonFromZero},
		{name: "from zero: zero value stays at zero", current: 0, value: 0, target: 15000, tol: def, wantReplicas: 0, wantReason: ReasonFromZero},
		{name: "from zero: no tolerance applied", current: 0, value: 30001, target: 15000, tol: UniformTolerances(1), wantReplicas: 3, wantReason: ReasonFromZero},
		// To zero: a zero value with current > 0 proposes zero.
		{name: "scale to zero", current: 5, value: 0, target: 14400, tol: def, wantReplicas: 0, wantReason: ReasonProportional},
		{name: "pending pods are not ready", current: 2, pods: podSpec{n: 2, phase: []corev1.PodPhase{corev1.PodRunning, corev1.PodPending}},
			value: 40000, target: 10000, tol: def, wantReplicas: 4},
		{name: "no pods", current: 2, pods: podSpec{n: -1}, value: 40000, target: 10000, tol: def, wantErr: ErrNoPods},
		{name: "zero target", current: 2, value: 1, target: 0, tol: def, wantErr: ErrInvalidTarget},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods
			var list []Pod
			if pods.n >= 0 {
				if pods.n == 0 {
					pods.n = int(tc.current)
				}
				list = pods.build()
			}
			got, err := ObjectValue(tc.value, ValueInput{CurrentReplicas: tc.current, Target: tc.target, Tolerances: tc.tol, Pods: list})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tc.wantReplicas || got.Value != tc.value {
				t.Errorf("got replicas=%d value=%d, want %d %d", got.Replicas, got.Value, tc.wantReplicas, tc.value)
			}
			if tc.wantReason != "" && got.Reason != tc.wantReason {
				t.Errorf("reason = %s, want %s", got.Reason, tc.wantReason)
			}
		})
	}
}

func TestExternalValue(t *testing.T) {
	def := UniformTolerances(DefaultTolerance)
	cases := []struct {
		name    string
		current int32
		pods    podSpec
		values  []int64
		target  int64
		tol     Tolerances

		wantReplicas int32
		wantUsage    int64
		wantErr      error
	}{
		// Upstream TestReplicaCalcExternalMetric.
		{name: "scale down: ignores unready pods (would otherwise scale up)", current: 3,
			pods: podSpec{ready: statuses(condFalse, condTrue, condFalse)}, values: []int64{8600}, target: 4400, tol: def,
			wantReplicas: 2, wantUsage: 8600},
		{name: "scale down", current: 5, values: []int64{8600}, target: 14334, tol: def, wantReplicas: 3, wantUsage: 8600},
		{name: "within default tolerance", current: 3, values: []int64{8600}, target: 8888, tol: def, wantReplicas: 3, wantUsage: 8600},
		{name: "outside configurable 1% tolerance", current: 3, values: []int64{8900}, target: 8800,
			tol: Tolerances{ScaleDown: DefaultTolerance, ScaleUp: .01}, wantReplicas: 4, wantUsage: 8900},
		{name: "usage overflow caps at MaxInt64", current: 3, values: []int64{math.MaxInt64/2 + 1, math.MaxInt64/2 + 1},
			target: math.MaxInt64, tol: def, wantReplicas: 3, wantUsage: math.MaxInt64},
		// Series are summed.
		{name: "sum of series", current: 2, values: []int64{1000, 2000, 3000}, target: 1500, tol: def, wantReplicas: 8, wantUsage: 6000},
		{name: "negative series are summed as is", current: 2, values: []int64{-1000, 4000}, target: 1500, tol: def, wantReplicas: 4, wantUsage: 3000},
		{name: "from zero", current: 0, values: []int64{100}, target: 15000, tol: def, wantReplicas: 1, wantUsage: 100},
		{name: "no series", current: 2, values: nil, target: 1, tol: def, wantErr: ErrNoExternalMetrics},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := tc.pods
			if pods.n == 0 {
				pods.n = int(tc.current)
			}
			got, err := ExternalValue(tc.values, ValueInput{CurrentReplicas: tc.current, Target: tc.target, Tolerances: tc.tol, Pods: pods.build()})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tc.wantReplicas || got.Value != tc.wantUsage {
				t.Errorf("got replicas=%d usage=%d, want %d %d", got.Replicas, got.Value, tc.wantReplicas, tc.wantUsage)
			}
		})
	}
}

func TestObjectAverageValue(t *testing.T) {
	def := UniformTolerances(DefaultTolerance)
	cases := []struct {
		name   string
		status int32
		value  int64
		target int64
		tol    Tolerances

		wantReplicas int32
		wantUsage    int64
		wantReason   Reason
	}{
		// Upstream TestReplicaCalcObjectPerPodMetric.
		{"scale up", 3, 20000, 5000, def, 4, 6667, ReasonTotalOverTarget},
		{"scale down", 5, 6000, 2000, def, 3, 1200, ReasonTotalOverTarget},
		{"within default tolerance", 4, 20166, 5000, def, 4, 5042, ReasonWithinTolerance},
		{"outside configurable 1% tolerance", 4, 20208, 5000, Tolerances{ScaleDown: DefaultTolerance, ScaleUp: .01}, 5, 5052, ReasonTotalOverTarget},
		// The proposal may go below the status count on the down side only past the down tolerance.
		{"per-direction: wide down tolerance keeps", 10, 30000, 5000, Tolerances{ScaleDown: .5, ScaleUp: 0}, 10, 3000, ReasonWithinTolerance},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ObjectAverageValue(tc.value, PerPodInput{StatusReplicas: tc.status, TargetAverage: tc.target, Tolerances: tc.tol})
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tc.wantReplicas || got.Value != tc.wantUsage || got.Reason != tc.wantReason {
				t.Errorf("got %d/%d/%s, want %d/%d/%s", got.Replicas, got.Value, got.Reason, tc.wantReplicas, tc.wantUsage, tc.wantReason)
			}
		})
	}
	if _, err := ObjectAverageValue(1, PerPodInput{StatusReplicas: 1}); !errors.Is(err, ErrInvalidTarget) {
		t.Errorf("zero target: error = %v, want %v", err, ErrInvalidTarget)
	}
}

func TestExternalAverageValue(t *testing.T) {
	def := UniformTolerances(DefaultTolerance)
	cases := []struct {
		name   string
		status int32
		values []int64
		target int64
		tol    Tolerances

		wantReplicas  int32
		wantUsage     int64
		wantSaturated bool
	}{
		// Upstream TestReplicaCalcExternalPerPodMetric.
		{"replica count overflow saturates to MaxInt32", 1, []int64{math.MaxInt64}, 1, def, math.MaxInt32, math.MaxInt64, true},
		{"usage overflow with huge target leaves replicas unchanged", 1, []int64{math.MaxInt64}, math.MaxInt64, def, 1, math.MaxInt64, false},
		{"scale up", 3, []int64{8600}, 2150, def, 4, 2867, false},
		{"scale down", 5, []int64{8600}, 2867, def, 3, 1720, false},
		{"within default tolerance", 3, []int64{8600}, 2900, def, 3, 2867, false},
		{"outside configurable 1% tolerance", 3, []int64{8600}, 2800, Tolerances{ScaleDown: DefaultTolerance, ScaleUp: .01}, 4, 2867, false},
		// A sum that turns negative saturates at MaxInt64, as upstream.
		{"sum overflow saturates", 2, []int64{math.MaxInt64, 1}, math.MaxInt64, def, 1, math.MaxInt64, true},
		{"negative series saturate", 2, []int64{-5}, 1000, def, math.MaxInt32, math.MaxInt64, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExternalAverageValue(tc.values, PerPodInput{StatusReplicas: tc.status, TargetAverage: tc.target, Tolerances: tc.tol})
			if err != nil {
				t.Fatal(err)
			}
			if got.Replicas != tc.wantReplicas || got.Value != tc.wantUsage || got.Saturated != tc.wantSaturated {
				t.Errorf("got %d/%d/%v, want %d/%d/%v", got.Replicas, got.Value, got.Saturated, tc.wantReplicas, tc.wantUsage, tc.wantSaturated)
			}
		})
	}
	if _, err := ExternalAverageValue(nil, PerPodInput{StatusReplicas: 1, TargetAverage: 1}); !errors.Is(err, ErrNoExternalMetrics) {
		t.Errorf("no series: error = %v", err)
	}
	if _, err := ExternalAverageValue([]int64{1}, PerPodInput{StatusReplicas: 1, TargetAverage: -1}); !errors.Is(err, ErrInvalidTarget) {
		t.Errorf("negative target: error = %v", err)
	}
}
