package evaluation

import (
	"errors"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// scheduled is an evaluation input with an external metric asking for
// metricReplicas (10 per replica) and the schedules.
func scheduled(h *Memory, current, metricReplicas int32, at time.Time, schedules ...Schedule) Input {
	in := input(h, current, external(int64(metricReplicas)*10_000))
	in.Spec.Schedules = schedules
	in.Now = at
	in.Readings[0].Timestamp = at
	return in
}

func TestEvaluateRaisesToFloorThroughScaleUp(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", time.Hour, 0, 12)
	at := utc("2026-11-23T12:00:30Z")
	var h Memory
	res := Evaluate(scheduled(&h, 2, 2, at, s), nil)
	// without a behavior, upstream's scale-up limit: max(2 × current, 4).
	if !res.Write || res.Desired != 4 {
		t.Fatalf("floor 12 from 2: desired %d write %v, want 4 (the scale-up limit)", res.Desired, res.Write)
	}
	if !strings.Contains(res.Decision.RescaleReason, "schedule sale holds the floor at 12") {
		t.Errorf("rescale reason %q", res.Decision.RescaleReason)
	}
	c := conditionOf(res.Status, ConditionSchedule)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "ScheduleActive" || !strings.Contains(c.Message, "until 2026-11-23T13:00:00Z") {
		t.Errorf("Schedule condition %+v", c)
	}
	rec := res.Record()
	if st := stepOf(rec, StageSchedule); st == nil || st.From != 2 || st.To != 12 || !strings.Contains(st.Message, "sale") {
		t.Errorf("record steps %+v, want Schedule 2 → 12", rec.Steps)
	}
	if st := stepOf(rec, StageScaleUpLimit); st == nil || st.From != 12 || st.To != 4 {
		t.Errorf("record steps %+v, want ScaleUpLimit 12 → 4", rec.Steps)
	}
	// The metrics asking for more than the floor: they decide; the record
	// still shows the floor.
	h = Memory{}
	res = Evaluate(scheduled(&h, 15, 15, at, s), nil)
	if res.Write || res.Desired != 15 {
		t.Errorf("metrics at 15 above the floor 12: desired %d write %v", res.Desired, res.Write)
	}
	if st := stepOf(res.Record(), StageSchedule); st == nil || st.From != 15 || st.To != 15 {
		t.Errorf("record steps %+v, want an unchanged Schedule step", res.Record().Steps)
	}
}

func stepOf(rec v1alpha1.DecisionRecord, name string) *v1alpha1.DecisionStep {
	for i := range rec.Steps {
		if rec.Steps[i].Stage == name {
			return &rec.Steps[i]
		}
	}
	return nil
}

// A floor above maxReplicas is held at maxReplicas (the bounds apply last).
func TestFloorAboveMaxReplicasClamped(t *testing.T) {
	s := Schedule{Name: "big", Cron: sched(t, "x", "0 12 * * *", "", time.Hour, 0, 1).Cron, Duration: time.Hour, MinReplicas: 50}
	var h Memory
	res := Evaluate(scheduled(&h, 18, 2, utc("2026-11-23T12:10:00Z"), s), nil)
	if !res.Write || res.Desired != 20 {
		t.Errorf("floor 50 with maxReplicas 20 from 18: desired %d write %v, want 20", res.Desired, res.Write)
	}
	if c := conditionOf(res.Status, autoscalingv2.ScalingLimited); c == nil || c.Reason != "TooManyReplicas" {
		t.Errorf("ScalingLimited %+v", c)
	}
}

// When the schedule ends the floor is released through the scale-down
// behavior: nothing comes down within the stabilization window, then the
// policy's pace; never a cliff.
func TestFloorReleasedThroughScaleDownBehavior(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", 10*time.Minute, 0, 8)
	window, period := int32(120), int32(60)
	minR := int32(2)
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: period}},
	}}
	var h Memory
	current := int32(2)
	var reached8, lastDown, lastFloor time.Time
	for at := utc("2026-11-23T11:58:00Z"); at.Before(utc("2026-11-23T12:30:00Z")); at = at.Add(15 * time.Second) {
		in := scheduled(&h, current, 2, at, s)
		in.Spec.HPA.MinReplicas, in.Spec.HPA.Behavior = &minR, b
		res := Evaluate(in, written(at, nil))
		if res.Floor.Replicas > 0 {
			lastFloor = at
		}
		if res.Write {
			if res.Desired < current {
				if at.Before(lastFloor.Add(time.Duration(window) * time.Second)) {
					t.Errorf("scaled down to %d at %s, within the stabilization window after the floor's last evaluation %s", res.Desired, at.Format(time.TimeOnly), lastFloor.Format(time.TimeOnly))
				}
				if current-res.Desired > 1 || (!lastDown.IsZero() && at.Sub(lastDown) < time.Duration(period)*time.Second) {
					t.Errorf("scaled down from %d to %d at %s (last at %s): faster than 1 pod per %ds", current, res.Desired, at.Format(time.TimeOnly), lastDown.Format(time.TimeOnly), period)
				}
				lastDown = at
			}
			current = res.Desired
		}
		switch {
		case at.Before(utc("2026-11-23T12:00:00Z")) && current != 2:
			t.Errorf("at %s before the start: %d replicas", at.Format(time.TimeOnly), current)
		case current == 8 && reached8.IsZero():
			reached8 = at
		}
	}
	if !reached8.Equal(utc("2026-11-23T12:00:15Z")) {
		t.Errorf("reached the floor 8 at %s, want the second evaluation after the start (2 → 6 → 8)", reached8)
	}
	if !lastFloor.Equal(utc("2026-11-23T12:09:45Z")) {
		t.Errorf("the floor last held at %s, want 12:09:45 (its end at 12:10 is exclusive)", lastFloor)
	}
	if current != 2 || lastDown.IsZero() {
		t.Errorf("after the release: %d replicas, want back at 2 through the policy", current)
	}
}

// Paused and dry-run hold back the floor's write like any decision; the
// decision, the condition and the record still show it.
func TestFloorPausedAndDryRun(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", time.Hour, 0, 6)
	for _, ext := range []Extensions{{Paused: true}, {DryRun: true}} {
		var h Memory
		in := scheduled(&h, 2, 2, utc("2026-11-23T12:01:00Z"), s)
		in.Spec.Extensions = ext
		res := Evaluate(in, nil)
		if res.Write || res.Desired != 4 || res.Outline.Outcome != v1alpha1.OutcomeWouldScale {
			t.Errorf("%+v: write %v desired %d outcome %s, want a held scale to 4", ext, res.Write, res.Desired, res.Outline.Outcome)
		}
		if c := conditionOf(res.Status, ConditionSchedule); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("%+v: Schedule condition %+v", ext, c)
		}
	}
}

// With a failed metric upstream does not scale; the floor still raises the
// count (a schedule needs no metric), and never lowers it.
func TestFloorWithFailedMetrics(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", time.Hour, 0, 4)
	at := utc("2026-11-23T12:01:00Z")
	failed := func(current int32) Input {
		var h Memory
		in := scheduled(&h, current, 2, at, s)
		in.Readings[0].FetchErr = errors.New("prometheus is down")
		in.Readings[0].Values = nil
		return in
	}
	res := Evaluate(failed(2), nil)
	if !res.Write || res.Desired != 4 || res.Decision.Failed {
		t.Errorf("failed metric, floor 4 from 2: write %v desired %d failed %v, want a scale to 4", res.Write, res.Desired, res.Decision.Failed)
	}
	res = Evaluate(failed(7), nil)
	if res.Write || !res.Decision.Failed {
		t.Errorf("failed metric, floor 4 at 7: write %v failed %v, want upstream's hold", res.Write, res.Decision.Failed)
	}
}

// An invalid schedule is ignored and reported; the valid ones apply.
func TestInvalidScheduleReported(t *testing.T) {
	spec := v1alpha1.AutoscalerSpec{MaxReplicas: 10, Schedules: []v1alpha1.ScheduleSpec{
		{Cron: "0 12 * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 5},
		{Name: "broken", Cron: "0 25 * * *", TimeZone: "Mars/Olympus", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 7},
	}}
	compiled := compileSchedules(&spec)
	if compiled[0].Err != nil || compiled[0].Name != "schedules[0]" {
		t.Fatalf("schedule 0: %+v", compiled[0])
	}
	if err := compiled[1].Err; err == nil || !strings.Contains(err.Error(), "spec.schedules[1].cron") || !strings.Contains(err.Error(), "spec.schedules[1].timeZone") {
		t.Fatalf("schedule 1 error %v, want both fields named", err)
	}
	var h Memory
	res := Evaluate(scheduled(&h, 3, 2, utc("2026-11-23T12:01:00Z"), compiled...), nil)
	if res.Desired != 5 {
		t.Errorf("desired %d, want the valid schedule's floor 5", res.Desired)
	}
	c := conditionOf(res.Status, ConditionSchedule)
	if c == nil || c.Reason != "InvalidSchedule" || c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, "spec.schedules[1].cron") {
		t.Errorf("Schedule condition %+v", c)
	}
	warned := false
	for _, e := range res.Events {
		warned = warned || e.Reason == "InvalidSchedule"
	}
	if !warned {
		t.Errorf("events %+v, want InvalidSchedule", res.Events)
	}
}

// Without schedules nothing changes: no condition, no step.
func TestNoScheduleNoCondition(t *testing.T) {
	var h Memory
	res := Evaluate(scheduled(&h, 2, 2, utc("2026-11-23T12:01:00Z")), nil)
	if c := conditionOf(res.Status, ConditionSchedule); c != nil {
		t.Errorf("condition %+v without schedules", c)
	}
	if st := stepOf(res.Record(), StageSchedule); st != nil {
		t.Errorf("step %+v without schedules", st)
	}
}

func TestFromAutoscalerSchedulesAndSyncPeriod(t *testing.T) {
	p := int32(5)
	spec := v1alpha1.AutoscalerSpec{MaxReplicas: 10, SyncPeriodSeconds: &p, Schedules: []v1alpha1.ScheduleSpec{
		{Name: "night", Cron: "@daily", TimeZone: "Asia/Tokyo", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 3,
			Ramp: &metav1.Duration{Duration: 2 * time.Minute}}}}
	s := FromAutoscaler(&spec)
	if s.SyncPeriod != 5*time.Second || len(s.Schedules) != 1 {
		t.Fatalf("spec %+v", s)
	}
	got := s.Schedules[0]
	if got.Name != "night" || got.Err != nil || got.Ramp != 2*time.Minute || got.MinReplicas != 3 {
		t.Errorf("schedule %+v", got)
	}
	// @daily in Tokyo starts at 15:00 UTC.
	if f := ActiveFloor(s.Schedules, 1, utc("2026-11-23T15:30:00Z")); f.Replicas != 3 {
		t.Errorf("floor %+v at 00:30 in Tokyo", f)
	}
	if FromAutoscaler(&v1alpha1.AutoscalerSpec{MaxReplicas: 1}).SyncPeriod != 0 {
		t.Error("unset syncPeriodSeconds: want 0 (the controller's period)")
	}
}

// A target the autoscaler scaled to zero wakes for a schedule even while
// every metric is below its activation; one set to zero by someone else stays
// disabled, as upstream.
func TestFloorWakesFromZero(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", time.Hour, 0, 3)
	for _, scaledToZero := range []bool{true, false} {
		var h Memory
		in := scheduled(&h, 0, 0, utc("2026-11-23T12:01:00Z"), s)
		zero := int32(0)
		in.Spec.HPA.MinReplicas = &zero
		in.Spec.MetricOptions = []MetricOptions{{Activation: qty("1")}}
		if scaledToZero {
			in.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue}}
		}
		res := Evaluate(in, nil)
		switch {
		case scaledToZero && (!res.Write || res.Desired != 3):
			t.Errorf("scaled to zero by the autoscaler: write %v desired %d, want a wake to the floor 3", res.Write, res.Desired)
		case !scaledToZero && res.Write:
			t.Errorf("set to zero by someone else: wrote %d, want scaling disabled", res.Desired)
		}
	}
}

func TestNextEvaluation(t *testing.T) {
	now := utc("2026-11-23T11:59:00Z")
	soon := Floor{NextChange: now.Add(20 * time.Second)}
	now1 := Floor{NextChange: now.Add(time.Millisecond)}
	for _, tc := range []struct {
		spec   time.Duration
		floor  Floor
		global time.Duration
		want   time.Duration
	}{
		{0, Floor{}, 15 * time.Second, 15 * time.Second},                    // the controller's period
		{0, Floor{}, 500 * time.Millisecond, 500 * time.Millisecond},        // a global period below 1 s is the operator's
		{5 * time.Second, Floor{}, 15 * time.Second, 5 * time.Second},       // the spec's
		{time.Minute, soon, 15 * time.Second, 20 * time.Second},             // a floor change sooner
		{5 * time.Second, soon, 15 * time.Second, 5 * time.Second},          // the period sooner
		{time.Minute, now1, 15 * time.Second, MinRequeue},                   // never below the floor
		{time.Minute, Floor{NextChange: now}, 15 * time.Second, MinRequeue}, // a change now
	} {
		s := Spec{SyncPeriod: tc.spec}
		if got := s.NextEvaluation(&tc.floor, now, tc.global); got != tc.want {
			t.Errorf("period %s, next change %v, global %s: %s, want %s", tc.spec, tc.floor.NextChange, tc.global, got, tc.want)
		}
	}
}
