package behavior

import (
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Fixed rules (no behavior). Stabilization cases from upstream
// TestNormalizeDesiredReplicas (5m window), bounds from
// TestConvertDesiredReplicasWithRules, plus window edges.
func TestNormalizeFixed(t *testing.T) {
	cases := []struct {
		name                string
		history             []Recommendation
		current, desired    int32
		minR, maxR          int32
		wantStabilized      int32
		wantReplicas        int32
		wantHistory         []int32
		wantAbleReason      string
		wantLimitReason     string
		wantLimitedStatusOn bool
	}{
		{name: "empty log", current: 5, desired: 5, minR: 1, maxR: 10, wantStabilized: 5, wantReplicas: 5,
			wantHistory: []int32{5}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		{name: "stabilize", history: recs(4, 2*time.Minute, 5, time.Minute), current: 5, desired: 3, minR: 1, maxR: 10,
			wantStabilized: 5, wantReplicas: 5, wantHistory: []int32{4, 5, 3}, wantAbleReason: ReasonScaleDownStabilized, wantLimitReason: ReasonDesiredWithinRange},
		{name: "no stabilize", history: recs(1, 2*time.Minute, 2, time.Minute), current: 5, desired: 3, minR: 1, maxR: 10,
			wantStabilized: 3, wantReplicas: 3, wantHistory: []int32{1, 2, 3}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		{name: "no stabilize - old recommendations", history: recs(10, 10*time.Minute, 9, 9*time.Minute), current: 5, desired: 3, minR: 1, maxR: 10,
			wantStabilized: 3, wantReplicas: 3, wantHistory: []int32{10, 3}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		{name: "stabilize - old recommendations", history: recs(10, 10*time.Minute, 4, time.Minute, 5, 2*time.Minute, 9, 9*time.Minute),
			current: 5, desired: 3, minR: 1, maxR: 10, wantStabilized: 5, wantReplicas: 5, wantHistory: []int32{10, 4, 5, 3},
			wantAbleReason: ReasonScaleDownStabilized, wantLimitReason: ReasonDesiredWithinRange},
		// Window edges: a recommendation exactly at the cutoff counts; one a
		// nanosecond older does not and is reused.
		{name: "recommendation exactly at window edge counts", history: recs(8, 5*time.Minute), current: 8, desired: 2, minR: 1, maxR: 10,
			wantStabilized: 8, wantReplicas: 8, wantHistory: []int32{8, 2}, wantAbleReason: ReasonScaleDownStabilized, wantLimitReason: ReasonDesiredWithinRange},
		{name: "recommendation just past window edge is reused", history: recs(8, 5*time.Minute+1), current: 8, desired: 2, minR: 1, maxR: 10,
			wantStabilized: 2, wantReplicas: 2, wantHistory: []int32{2}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		// Upstream TestStabilizeDownscale.
		{name: "stabilize downscale", history: recs(10, 10*time.Minute, 4, time.Minute), current: 4, desired: 2, minR: 1, maxR: 5,
			wantStabilized: 4, wantReplicas: 4, wantHistory: []int32{2, 4}, wantAbleReason: ReasonScaleDownStabilized, wantLimitReason: ReasonDesiredWithinRange},
		// Upstream TestConvertDesiredReplicasWithRules.
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, minR: 3, maxR: 8,
			wantStabilized: 7, wantReplicas: 7, wantHistory: []int32{7}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, minR: 2, maxR: 8,
			wantStabilized: 1, wantReplicas: 2, wantHistory: []int32{1}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonTooFewReplicas, wantLimitedStatusOn: true},
		{name: "prenormalized desired zeroed replicas within range (minReplicas 0)", current: 1, desired: 0, minR: 0, maxR: 10,
			wantStabilized: 0, wantReplicas: 0, wantHistory: []int32{0}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, minR: 1, maxR: 10,
			wantStabilized: 1000, wantReplicas: 10, wantHistory: []int32{1000}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonTooManyReplicas, wantLimitedStatusOn: true},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas", current: 3, desired: 1000, minR: 1, maxR: 2000,
			wantStabilized: 1000, wantReplicas: 6, wantHistory: []int32{1000}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonScaleUpLimit, wantLimitedStatusOn: true},
		{name: "scale-up limit minimum is four", current: 1, desired: 9, minR: 1, maxR: 10,
			wantStabilized: 9, wantReplicas: 4, wantHistory: []int32{9}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonScaleUpLimit, wantLimitedStatusOn: true},
		// From zero (minReplicas 0): the limit is still 4.
		{name: "from zero the scale-up limit is four", current: 0, desired: 7, minR: 0, maxR: 10,
			wantStabilized: 7, wantReplicas: 4, wantHistory: []int32{7}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonScaleUpLimit, wantLimitedStatusOn: true},
		// A within-range count reports the reason of the upper bound only when exceeded.
		{name: "at max with limit above", current: 6, desired: 10, minR: 1, maxR: 10,
			wantStabilized: 10, wantReplicas: 10, wantHistory: []int32{10}, wantAbleReason: ReasonReadyForNewScale, wantLimitReason: ReasonDesiredWithinRange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.history)
			got := Normalize(Request{
				CurrentReplicas: tc.current, DesiredReplicas: tc.desired, MinReplicas: tc.minR, MaxReplicas: tc.maxR,
				DownscaleStabilizationWindow: DefaultDownscaleStabilizationWindow, Recommendations: in, Now: testNow(),
			})
			if got.Stabilized != tc.wantStabilized || got.Replicas != tc.wantReplicas {
				t.Errorf("stabilized=%d replicas=%d, want %d %d", got.Stabilized, got.Replicas, tc.wantStabilized, tc.wantReplicas)
			}
			if v := values(got.Recommendations); !slices.Equal(v, tc.wantHistory) {
				t.Errorf("history = %v, want %v", v, tc.wantHistory)
			}
			if got.AbleToScale.Reason != tc.wantAbleReason || got.AbleToScale.Status != corev1.ConditionTrue {
				t.Errorf("AbleToScale = %+v, want reason %s", got.AbleToScale, tc.wantAbleReason)
			}
			wantStatus := corev1.ConditionFalse
			if tc.wantLimitedStatusOn {
				wantStatus = corev1.ConditionTrue
			}
			if got.ScalingLimited.Reason != tc.wantLimitReason || got.ScalingLimited.Status != wantStatus {
				t.Errorf("ScalingLimited = %+v, want %s/%s", got.ScalingLimited, wantStatus, tc.wantLimitReason)
			}
			if !slices.Equal(in, tc.history) {
				t.Errorf("input history was modified")
			}
		})
	}
}

// Upstream TestScaleDownStabilizeInitialSize: the first reconcile seeds the
// history with the current count, so an immediate scale-down is stabilized.
func TestSeedRecommendationsStabilizesFirstScaleDown(t *testing.T) {
	history := SeedRecommendations(nil, 5, testNow())
	got := Normalize(Request{CurrentReplicas: 5, DesiredReplicas: 2, MinReplicas: 1, MaxReplicas: 6,
		DownscaleStabilizationWindow: DefaultDownscaleStabilizationWindow, Recommendations: history, Now: testNow()})
	if got.Replicas != 5 || got.AbleToScale.Reason != ReasonScaleDownStabilized {
		t.Errorf("got %d/%s, want 5/%s", got.Replicas, got.AbleToScale.Reason, ReasonScaleDownStabilized)
	}
	kept := recs(3, time.Minute)
	if again := SeedRecommendations(kept, 9, testNow()); !slices.Equal(again, kept) {
		t.Errorf("a non-empty history must be kept, got %v", again)
	}
}

// Upstream TestNormalizeDesiredReplicasWithBehavior (stabilization with
// per-direction windows), plus window edges.
func TestNormalizeWithBehaviorStabilization(t *testing.T) {
	cases := []struct {
		name             string
		history          []Recommendation
		current, desired int32
		up, down         int32
		wantStabilized   int32
		wantHistory      []int32
		wantAbleReason   string
	}{
		{name: "empty recommendations for scaling down", current: 100, desired: 5, wantStabilized: 5, wantHistory: []int32{5}, wantAbleReason: ReasonReadyForNewScale},
		{name: "simple scale down stabilization", history: recs(4, 2*time.Minute, 5, time.Minute), current: 100, desired: 3, down: 180,
			wantStabilized: 5, wantHistory: []int32{4, 5, 3}, wantAbleReason: ReasonScaleDownStabilized},
		{name: "simple scale up stabilization", history: recs(4, 2*time.Minute, 5, time.Minute), current: 1, desired: 7, up: 300,
			wantStabilized: 4, wantHistory: []int32{4, 5, 7}, wantAbleReason: ReasonScaleUpStabilized},
		{name: "no scale down stabilization", history: recs(1, 2*time.Minute, 2, time.Minute), current: 100, desired: 3, up: 300,
			wantStabilized: 3, wantHistory: []int32{1, 2, 3}, wantAbleReason: ReasonReadyForNewScale},
		{name: "no scale up stabilization", history: recs(4, 2*time.Minute, 5, time.Minute), current: 1, desired: 3, down: 300,
			wantStabilized: 3, wantHistory: []int32{4, 5, 3}, wantAbleReason: ReasonReadyForNewScale},
		{name: "no scale down stabilization, reuse recommendation element", history: recs(10, 10*time.Minute, 9, 9*time.Minute),
			current: 100, desired: 3, wantStabilized: 3, wantHistory: []int32{10, 3}, wantAbleReason: ReasonReadyForNewScale},
		{name: "no scale up stabilization, reuse recommendation element", history: recs(10, 10*time.Minute, 9, 9*time.Minute),
			current: 1, desired: 100, wantStabilized: 100, wantHistory: []int32{10, 100}, wantAbleReason: ReasonReadyForNewScale},
		{name: "scale down stabilization, reuse one of obsolete recommendation element",
			history: recs(10, 10*time.Minute, 4, time.Minute, 5, 2*time.Minute, 9, 9*time.Minute), current: 100, desired: 3, down: 180,
			wantStabilized: 5, wantHistory: []int32{10, 4, 5, 3}, wantAbleReason: ReasonScaleDownStabilized},
		{name: "scale up stabilization, reuse one of obsolete recommendation element",
			history: recs(10, 100*time.Minute, 6, time.Minute, 5, 2*time.Minute, 9, 3*time.Minute), current: 1, desired: 100, up: 300,
			wantStabilized: 5, wantHistory: []int32{100, 6, 5, 9}, wantAbleReason: ReasonScaleUpStabilized},
		{name: "scale up and down stabilization, do not scale up when prenormalized rec goes down",
			history: recs(2, 100*time.Minute, 3, 3*time.Minute), current: 2, desired: 1, up: 300, down: 300,
			wantStabilized: 2, wantHistory: []int32{1, 3}, wantAbleReason: ReasonScaleDownStabilized},
		{name: "scale up and down stabilization, do not scale down when prenormalized rec goes up",
			history: recs(2, 100*time.Minute, 1, 3*time.Minute), current: 2, desired: 3, up: 300, down: 300,
			wantStabilized: 2, wantHistory: []int32{3, 1}, wantAbleReason: ReasonScaleUpStabilized},
		// Edges: with behavior the windows are open, so a recommendation
		// exactly at the cutoff neither counts nor is reused.
		{name: "recommendation exactly at scale-down window edge does not count", history: recs(8, 60*time.Second),
			current: 8, desired: 2, down: 60, wantStabilized: 2, wantHistory: []int32{8, 2}, wantAbleReason: ReasonReadyForNewScale},
		{name: "recommendation just inside scale-down window counts", history: recs(8, 60*time.Second-1),
			current: 8, desired: 2, down: 60, wantStabilized: 8, wantHistory: []int32{8, 2}, wantAbleReason: ReasonScaleDownStabilized},
		{name: "recommendation exactly at scale-up window edge does not count", history: recs(3, 60*time.Second),
			current: 2, desired: 9, up: 60, wantStabilized: 9, wantHistory: []int32{3, 9}, wantAbleReason: ReasonReadyForNewScale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(tc.up)},
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(tc.down)},
			}
			got := Normalize(Request{CurrentReplicas: tc.current, DesiredReplicas: tc.desired, MinReplicas: 1, MaxReplicas: 1000,
				Behavior: b, Recommendations: tc.history, Now: testNow()})
			if got.Stabilized != tc.wantStabilized {
				t.Errorf("stabilized = %d, want %d", got.Stabilized, tc.wantStabilized)
			}
			if v := values(got.Recommendations); !slices.Equal(v, tc.wantHistory) {
				t.Errorf("history = %v, want %v", v, tc.wantHistory)
			}
			if got.AbleToScale.Reason != tc.wantAbleReason {
				t.Errorf("AbleToScale reason = %s, want %s", got.AbleToScale.Reason, tc.wantAbleReason)
			}
		})
	}
}

// With behavior and no scale-down window set, the controller's flag applies.
func TestNormalizeWithBehaviorUsesDownscaleFlag(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, 0, 100, 15, 0)}
	r := Request{CurrentReplicas: 8, DesiredReplicas: 2, MinReplicas: 1, MaxReplicas: 10, Behavior: b,
		Recommendations: recs(8, 4*time.Minute), Now: testNow()}
	r.DownscaleStabilizationWindow = 5 * time.Minute
	if got := Normalize(r); got.Replicas != 8 {
		t.Errorf("with a 5m flag: replicas = %d, want 8", got.Replicas)
	}
	r.DownscaleStabilizationWindow = 3 * time.Minute
	if got := Normalize(r); got.Replicas != 2 {
		t.Errorf("with a 3m flag: replicas = %d, want 2", got.Replicas)
	}
}
