package evaluation

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// sched compiles one schedule as FromAutoscaler does.
func sched(t *testing.T, name, cronExpr, tz string, duration, ramp time.Duration, minReplicas int32) Schedule {
	t.Helper()
	spec := v1alpha1.AutoscalerSpec{MaxReplicas: 100, Schedules: []v1alpha1.ScheduleSpec{{
		Name: name, Cron: cronExpr, TimeZone: tz, Duration: metav1.Duration{Duration: duration}, MinReplicas: minReplicas,
		Ramp: &metav1.Duration{Duration: ramp}}}}
	s := compileSchedules(&spec)[0]
	if s.Err != nil {
		t.Fatalf("schedule %s: %v", cronExpr, s.Err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A weekday 08:00 in Europe/Paris is 07:00 UTC in winter time and 06:00 UTC
// from the last Sunday of March; robfig/cron skips a local time the change
// removes and fires twice at one it repeats.
func TestFloorInTimeZoneAcrossDST(t *testing.T) {
	office := sched(t, "office", "0 8 * * 1-5", "Europe/Paris", 2*time.Hour, 0, 6)
	night := sched(t, "night", "30 2 * * *", "Europe/Paris", 30*time.Minute, 0, 3)
	tests := []struct {
		s    Schedule
		at   string
		want int32
	}{
		{office, "2026-03-27T06:59:59Z", 0}, // Friday 07:59:59 CET
		{office, "2026-03-27T07:00:00Z", 6}, // Friday 08:00 CET
		{office, "2026-03-27T08:59:59Z", 6},
		{office, "2026-03-27T09:00:00Z", 0}, // the two hours are over
		{office, "2026-03-28T07:30:00Z", 0}, // Saturday
		{office, "2026-03-30T05:59:59Z", 0}, // Monday 07:59:59 CEST
		{office, "2026-03-30T06:00:00Z", 6}, // Monday 08:00 CEST
		{office, "2026-03-30T07:59:59Z", 6},
		{office, "2026-03-30T08:00:00Z", 0},
		{night, "2026-03-28T01:45:00Z", 3}, // Saturday 02:45 CET
		{night, "2026-03-29T00:45:00Z", 0}, // Sunday: 02:30 does not exist
		{night, "2026-03-29T01:45:00Z", 0}, // (03:45 CEST)
		{night, "2026-10-25T00:45:00Z", 3}, // 02:45 CEST, first time
		{night, "2026-10-25T01:45:00Z", 3}, // 02:45 CET, second time
		{night, "2026-10-25T02:01:00Z", 0},
	}
	for _, tc := range tests {
		f := ActiveFloor([]Schedule{tc.s}, 1, utc(tc.at))
		if f.Replicas != tc.want {
			t.Errorf("%s at %s: floor %d, want %d", tc.s.Name, tc.at, f.Replicas, tc.want)
		}
	}
	f := ActiveFloor([]Schedule{office}, 1, utc("2026-03-30T06:10:00Z"))
	if !f.Start.Equal(utc("2026-03-30T06:00:00Z")) || !f.Until.Equal(utc("2026-03-30T08:00:00Z")) || f.Schedule != "office" {
		t.Errorf("floor %+v, want office from 06:00 until 08:00 UTC", f)
	}
	if !f.NextChange.Equal(f.Until) {
		t.Errorf("next change %v, want the end %v", f.NextChange, f.Until)
	}
	f = ActiveFloor([]Schedule{office}, 1, utc("2026-03-28T12:00:00Z"))
	if !f.NextChange.Equal(utc("2026-03-30T06:00:00Z")) {
		t.Errorf("on Saturday the next change is %v, want Monday's start", f.NextChange)
	}
}

func TestFloorOverlapTakesMaximum(t *testing.T) {
	a := sched(t, "a", "0 9 * * *", "", 3*time.Hour, 0, 4)
	b := sched(t, "b", "0 10 * * *", "", time.Hour, 0, 9)
	c := sched(t, "c", "0 10 * * *", "", 4*time.Hour, 0, 9)
	for _, tc := range []struct {
		at   string
		want int32
		name string
	}{
		{"2026-11-23T09:30:00Z", 4, "a"},
		{"2026-11-23T10:30:00Z", 9, "b"}, // b and c tie: the first listed
		{"2026-11-23T11:30:00Z", 9, "c"},
		{"2026-11-23T13:30:00Z", 9, "c"},
		{"2026-11-23T14:00:00Z", 0, ""},
	} {
		f := ActiveFloor([]Schedule{a, b, c}, 1, utc(tc.at))
		if f.Replicas != tc.want || f.Schedule != tc.name {
			t.Errorf("at %s: floor %d by %q, want %d by %q", tc.at, f.Replicas, f.Schedule, tc.want, tc.name)
		}
	}
}

// Over the ramp the floor rises from the spec's minReplicas to the
// schedule's: base + ceil(rise × elapsed / ramp).
func TestFloorRamp(t *testing.T) {
	s := sched(t, "sale", "0 12 * * *", "", time.Hour, 8*time.Minute, 10)
	start := utc("2026-11-23T12:00:00Z")
	for _, tc := range []struct {
		before time.Duration
		want   int32
	}{
		{9 * time.Minute, 0},
		{8 * time.Minute, 2}, // the ramp's first instant: base
		{7 * time.Minute, 3}, // 1 of 8 minutes: ceil(8×1/8) = 1 above base
		{4 * time.Minute, 6},
		{90 * time.Second, 9}, // ceil(8 × 6.5/8) = 7 above base
		{time.Second, 10},
		{0, 10},
	} {
		f := ActiveFloor([]Schedule{s}, 2, start.Add(-tc.before))
		if f.Replicas != tc.want {
			t.Errorf("%s before the start: floor %d, want %d", tc.before, f.Replicas, tc.want)
		}
		if tc.want > 0 && tc.before > 0 && (!f.Ramping || !f.Start.Equal(start) || !f.Until.Equal(start.Add(time.Hour))) {
			t.Errorf("%s before the start: %+v, want ramping to the 12:00 start", tc.before, f)
		}
	}
	f := ActiveFloor([]Schedule{s}, 2, start.Add(-9*time.Minute))
	if !f.NextChange.Equal(start.Add(-8 * time.Minute)) {
		t.Errorf("before the ramp the next change is %v, want the ramp's start", f.NextChange)
	}
	f = ActiveFloor([]Schedule{s}, 2, start.Add(-4*time.Minute))
	if !f.NextChange.Equal(start.Add(-3 * time.Minute)) {
		t.Errorf("in the ramp the next change is %v, want a minute on (8 replicas over 8 minutes)", f.NextChange)
	}
	// A floor at or below the base has nothing to ramp.
	if f := ActiveFloor([]Schedule{sched(t, "low", "0 12 * * *", "", time.Hour, 8*time.Minute, 2)}, 5, start.Add(-time.Minute)); f.Replicas != 2 {
		t.Errorf("floor below the base: %d, want 2 (no effect on a decision at minReplicas 5)", f.Replicas)
	}
}

// Occurrences that start before the previous one ends extend it.
func TestFloorUntilFollowsBackToBack(t *testing.T) {
	s := sched(t, "hourly", "0 * * * *", "", 90*time.Minute, 0, 3)
	f := ActiveFloor([]Schedule{s}, 1, utc("2026-11-23T10:10:00Z"))
	want := utc("2026-11-23T10:00:00Z").Add(chainLimit*time.Hour + 90*time.Minute)
	if f.Replicas != 3 || !f.Start.Equal(utc("2026-11-23T10:00:00Z")) || !f.Until.Equal(want) {
		t.Errorf("floor %+v, want from 10:00 until %v (chain bounded)", f, want)
	}
}
