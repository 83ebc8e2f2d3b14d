package replicas

import (
	"math"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mirrors upstream tolerancesForHpa (TestConfigurableTolerance).
func TestTolerancesFor(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	cases := []struct {
		name     string
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		want     Tolerances
	}{
		{"no behavior", nil, Tolerances{0.1, 0.1}},
		{"behavior without tolerances", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{}}, Tolerances{0.1, 0.1}},
		{"scale-down only", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: q("0.05")}}, Tolerances{0.05, 0.1}},
		{"scale-up only", &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: q("10m")}}, Tolerances{0.1, 0.01}},
		{"both", &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: q("0")}, ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: q("2")}}, Tolerances{2, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TolerancesFor(0.1, tc.behavior); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestTolerancesWithin(t *testing.T) {
	tol := Tolerances{ScaleDown: 0.2, ScaleUp: 0.05}
	cases := []struct {
		ratio float64
		want  bool
	}{
		{0.79, false}, {0.8, true}, {1, true}, {1.05, true}, {1.0501, false}, {math.NaN(), false}, {math.Inf(1), false},
	}
	for _, tc := range cases {
		if got := tol.Within(tc.ratio); got != tc.want {
			t.Errorf("Within(%v) = %v, want %v", tc.ratio, got, tc.want)
		}
	}
	if got, want := tol.String(), "[down:20.0%, up:5.0%]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestPodFromCore(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &start},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(100)}}},
			InitContainers: []corev1.Container{{Name: "s", RestartPolicy: &always}, {Name: "i"}},
			Resources:      &corev1.ResourceRequirements{Requests: cpu(300)},
			Overhead:       cpu(10),
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &start,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: start},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
		},
	}
	got := PodFromCore(p)
	if got.Name != "p" || !got.Deleting || got.Phase != corev1.PodRunning || !got.StartTime.Equal(start.Time) {
		t.Errorf("basic facts wrong: %+v", got)
	}
	if got.Ready == nil || got.Ready.Status != corev1.ConditionFalse || !got.Ready.LastTransitionTime.Equal(start.Time) {
		t.Errorf("ready = %+v, want the first Ready condition", got.Ready)
	}
	if len(got.InitContainers) != 2 || !got.InitContainers[0].RestartAlways || got.InitContainers[1].RestartAlways {
		t.Errorf("init containers = %+v", got.InitContainers)
	}
	r, err := Requests([]Pod{got}, corev1.ResourceCPU, "")
	if err != nil || r["p"] != 310 {
		t.Errorf("requests = %v, %v; want 310", r, err)
	}
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("5")
	if q := got.Containers[0].Requests[corev1.ResourceCPU]; q.MilliValue() != 100 {
		t.Errorf("PodFromCore shares the request map with the pod")
	}
	if empty := PodFromCore(&corev1.Pod{}); empty.Ready != nil || empty.StartTime != nil || empty.Deleting {
		t.Errorf("empty pod = %+v", empty)
	}
}
