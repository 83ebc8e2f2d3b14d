package simulate

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// scheduledSpec is an Autoscaler spec read as the controller reads it
// (evaluation.FromAutoscaler): one External metric (10 per replica) and edit's
// changes.
func scheduledSpec(t *testing.T, edit func(*v1alpha1.AutoscalerSpec)) evaluation.Spec {
	t.Helper()
	minR := int32(2)
	a := v1alpha1.AutoscalerSpec{MinReplicas: &minR, MaxReplicas: 20,
		Metrics: []v1alpha1.MetricSpec{{MetricSpec: externalMetric("queue", 10_000)}}}
	edit(&a)
	s := evaluation.FromAutoscaler(&a)
	for _, sc := range s.Schedules {
		if sc.Err != nil {
			t.Fatal(sc.Err)
		}
	}
	return s
}

// A schedule replays as the controller runs it: the floor rises over the
// ramp before its start, holds for its duration, and is released through
// the scale-down stabilization window.
func TestScheduleReplays(t *testing.T) {
	window := int32(300)
	s := scheduledSpec(t, func(a *v1alpha1.AutoscalerSpec) {
		// t0 is 00:00 UTC: a floor of 10 from 00:10 to 00:30, ramped over 2 minutes.
		a.Schedules = []v1alpha1.ScheduleSpec{{Name: "batch", Cron: "10 0 * * *", Duration: metav1.Duration{Duration: 20 * time.Minute},
			MinReplicas: 10, Ramp: &metav1.Duration{Duration: 2 * time.Minute}}}
		a.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window}}
	})
	n := 60 * 4 // an hour at 15 s
	cfg := config(n, 2)
	res := run(t, cfg, s, constant(n, 15_000)) // 15 queued: 2 replicas
	at := func(d time.Duration) int32 { return res.Steps[int(d/cfg.Step)].Replicas }
	if got := at(7*time.Minute + 45*time.Second); got != 2 {
		t.Errorf("before the ramp: %d replicas", got)
	}
	if got := at(8*time.Minute + 15*time.Second); got <= 2 {
		t.Errorf("15 s into the ramp: %d replicas, want the floor rising", got)
	}
	if got := at(9 * time.Minute); got >= 10 || got <= 2 {
		t.Errorf("mid-ramp: %d replicas, want between 2 and 10", got)
	}
	if got := at(10 * time.Minute); got != 10 {
		t.Errorf("at the start: %d replicas, want the floor 10", got)
	}
	if got := at(34*time.Minute + 30*time.Second); got != 10 {
		t.Errorf("within the stabilization window after the end: %d replicas, want 10", got)
	}
	if got := at(36 * time.Minute); got != 2 {
		t.Errorf("after the stabilization window: %d replicas, want 2", got)
	}
}

// With spec.syncPeriodSeconds longer than the step, the replay evaluates
// only at that period; the steps between observe.
func TestSyncPeriodReplays(t *testing.T) {
	s := scheduledSpec(t, func(a *v1alpha1.AutoscalerSpec) { a.SyncPeriodSeconds = ptr[int32](60) })
	n := 40
	series := constant(n, 15_000)
	for i := 5; i < n; i++ {
		series.Values[i] = 95_000 // 10 replicas from 01:15
	}
	res := run(t, config(n, 2), fastUp(s), series)
	for i, st := range res.Steps {
		if st.Rescaled && i%4 != 0 {
			t.Errorf("rescaled at step %d (%s), not on the 60 s period", i, st.Time.Format(time.TimeOnly))
		}
	}
	if st := res.Steps[7]; st.Replicas != 2 || !st.UnderProvisioned {
		t.Errorf("step 7 (between evaluations): %d replicas, under-provisioned %v, want 2 and true", st.Replicas, st.UnderProvisioned)
	}
	if st := res.Steps[8]; !st.Rescaled || st.Replicas != 10 {
		t.Errorf("step 8 (60 s after 00:01): rescaled %v to %d, want 10", st.Rescaled, st.Replicas)
	}
	// Without it, every step evaluates.
	res = run(t, config(n, 2), fastUp(scheduledSpec(t, func(*v1alpha1.AutoscalerSpec) {})), series)
	if st := res.Steps[5]; !st.Rescaled || st.Replicas != 10 {
		t.Errorf("every 15 s: step 5 rescaled %v to %d, want 10", st.Rescaled, st.Replicas)
	}
}
