package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
)

// TestSchedule: an Autoscaler whose queue asks for 1 replica has a
// schedule (cron in Asia/Kolkata, UTC+05:30) holding 4 replicas for one
// minute; the floor is applied at its start (evaluated every 2 s through
// syncPeriodSeconds) and released at its end through the scale-down
// behavior: held for the stabilization window, then one pod per 10 s. The
// CRD refuses what CEL can check; a cron it cannot check is reported by the
// controller, naming the field.
func TestSchedule(t *testing.T) {
	t.Parallel()
	ebb, ns := startExtensionsTest(t, "e2e-schedule-")
	q := setQueue(t, ns+"-q", 5)
	zone, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start := now.Truncate(time.Minute).Add(time.Minute)
	if start.Sub(now) < 40*time.Second {
		start = start.Add(time.Minute)
	}
	local := start.In(zone)
	spec := hpaSpec(1, 10, &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](20),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 10}},
		},
	}, externalMetric(q, averageValue("10")))
	spec.ScaleTargetRef.Name = "web"
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.SyncPeriodSeconds = ptr.To[int32](2)
	a.Spec.Schedules = []v1alpha1.ScheduleSpec{{Name: "launch", Cron: fmt.Sprintf("%d %d * * *", local.Minute(), local.Hour()),
		TimeZone: "Asia/Kolkata", Duration: metav1.Duration{Duration: time.Minute}, MinReplicas: 4}}

	t.Run("the CRD refuses", func(t *testing.T) {
		for _, tc := range []struct {
			edit func(*v1alpha1.Autoscaler)
			want string
		}{
			{func(b *v1alpha1.Autoscaler) { b.Spec.Schedules[0].MinReplicas = 11 }, "spec.schedules: Invalid value"},
			{func(b *v1alpha1.Autoscaler) { b.Spec.Schedules[0].Duration.Duration = 0 }, "spec.schedules[0].duration: Invalid value"},
			{func(b *v1alpha1.Autoscaler) { b.Spec.SyncPeriodSeconds = ptr.To[int32](0) }, "spec.syncPeriodSeconds"},
		} {
			b := a.DeepCopy()
			b.Name = "refused"
			tc.edit(b)
			_, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), b, metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want an error with %q", err, tc.want)
			}
		}
	})

	w := watchReplicas(ns, "web")
	if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}
	t.Run("a cron the CRD cannot check is reported", func(t *testing.T) {
		createDeployment(t, ns, "other") // two autoscalers of one Deployment would be ambiguous
		b := a.DeepCopy()
		b.Name, b.Spec.DryRun, b.Spec.ScaleTargetRef.Name = "bad-cron", true, "other"
		b.Spec.Schedules[0].Cron = "0 25 * * *"
		if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		waitAutoscalerReason(t, ns, "bad-cron", "Schedule", corev1.ConditionFalse, "InvalidSchedule")
		got, err := getAutoscaler(context.Background(), ns, "bad-cron")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == "Schedule" && !strings.Contains(c.Message, "spec.schedules[0].cron") {
				t.Errorf("Schedule condition %q does not name spec.schedules[0].cron", c.Message)
			}
		}
	})

	if err := replicasHeld(ns, "web", 1, time.Until(start.Add(-2*time.Second)), hpaPollInterval); err != nil {
		t.Fatalf("before the schedule's start %s: %v", start.Format(time.TimeOnly), err)
	}
	waitReplicas(t, ns, "web", scaleUpTimeout, "the floor 4", func(r int32) bool { return r == 4 })
	if late := time.Since(start); late > 20*time.Second {
		t.Errorf("the floor applied %s after the start, want within a few 2 s periods", late)
	}
	rec := waitDecision(t, ebb, ns, "web", "a Schedule step 1 → 4", func(r *v1alpha1.DecisionRecord) bool { return hasStep(r, "Schedule", 1, 4) })
	want := "schedule launch holds the floor at 4 replicas until " + start.Add(time.Minute).UTC().Format(time.RFC3339)
	if !slices.ContainsFunc(rec.Steps, func(s v1alpha1.DecisionStep) bool { return s.Stage == "Schedule" && strings.Contains(s.Message, want) }) {
		t.Errorf("record steps %+v, want a Schedule step saying %q", rec.Steps, want)
	}
	waitAutoscalerReason(t, ns, "web", "Schedule", corev1.ConditionTrue, "ScheduleActive")

	end := start.Add(time.Minute)
	if err := replicasHeld(ns, "web", 4, time.Until(end.Add(15*time.Second)), hpaPollInterval); err != nil {
		t.Fatalf("during the schedule and the stabilization window after its end %s: %v", end.Format(time.TimeOnly), err)
	}
	waitReplicas(t, ns, "web", 2*time.Minute, "back to 1", func(r int32) bool { return r == 1 })
	time.Sleep(2 * time.Second) // the watch samples every second
	got := w.end()
	if !slices.Equal(got, []int32{1, 4, 3, 2, 1}) {
		t.Errorf("replicas %v, want 1, the floor 4, then one pod at a time back to 1", got)
	}
	waitAutoscalerReason(t, ns, "web", "Schedule", corev1.ConditionFalse, "NoScheduleActive")
}
