package behavior

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Cases from upstream TestScalingWithRules, run through Normalize with an
// empty history (so the stabilized count equals the desired one).
func TestNormalizeWithBehaviorPolicies(t *testing.T) {
	cases := []struct {
		name             string
		up, down         []ScaleEvent
		minR, maxR       int32
		upRules          *autoscalingv2.HPAScalingRules
		downRules        *autoscalingv2.HPAScalingRules
		current, desired int32
		want             int32
		wantReason       string
	}{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, minR: 3, maxR: 8, want: 7, wantReason: ReasonDesiredWithinRange},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, minR: 2, maxR: 8, want: 2, wantReason: ReasonTooFewReplicas},
		{name: "prenormalized desired replicas within range when minReplicas is 0", current: 1, desired: 0, minR: 0, maxR: 10, want: 0, wantReason: ReasonDesiredWithinRange},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", current: 20, desired: 1000, minR: 1, maxR: 10, want: 10, wantReason: ReasonTooManyReplicas},
		{name: "desired replica count is more than the maximum replica count", current: 100, desired: 1000, minR: 100, maxR: 150, want: 150, wantReason: ReasonTooManyReplicas},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", upRules: rules(0, 0, 1, 60, 0),
			current: 3, desired: 1000, minR: 1, maxR: 2000, want: 4, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with default behavior", current: 10, desired: 50, minR: 1, maxR: 1000, want: 20, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with pods policy larger than percent policy", upRules: rules(100, 60, 100, 60, 0), current: 10, desired: 500, minR: 1, maxR: 1000, want: 110, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy larger than pods policy", upRules: rules(2, 60, 100, 60, 0), current: 10, desired: 500, minR: 1, maxR: 1000, want: 20, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", upRules: rules(100, 60, 0, 0, 0), current: 10, desired: 50, minR: 1, maxR: 1000, want: 50, wantReason: ReasonDesiredWithinRange},
		{name: "scaleUp with pod policy limitation", upRules: rules(30, 60, 0, 0, 0), current: 10, desired: 50, minR: 1, maxR: 1000, want: 40, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy limitation", upRules: rules(0, 0, 200, 60, 0), current: 10, desired: 50, minR: 1, maxR: 1000, want: 30, wantReason: ReasonScaleUpLimit},
		{name: "scaleDown with percent policy larger than pod policy", downRules: rules(20, 60, 1, 60, 300), current: 100, desired: 2, minR: 1, maxR: 1000, want: 80, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with pod policy larger than percent policy", downRules: rules(2, 60, 1, 60, 300), current: 100, desired: 2, minR: 1, maxR: 1000, want: 98, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", downRules: rules(100, 60, 0, 0, 300), current: 10, desired: 0, minR: 1, maxR: 1000, want: 1, wantReason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", downRules: rules(0, 0, 100, 60, 300), current: 10, desired: 2, minR: 5, maxR: 1000, want: 5, wantReason: ReasonTooFewReplicas},
		{name: "scaleDown with pod policy limitation", downRules: rules(5, 60, 0, 0, 300), current: 10, desired: 2, minR: 1, maxR: 1000, want: 5, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy limitation", downRules: rules(0, 0, 50, 60, 300), current: 10, desired: 5, minR: 1, maxR: 1000, want: 5, wantReason: ReasonDesiredWithinRange},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", up: uniformEvents([]int32{1, 5, 9}, 120),
			upRules: rules(300, 60, 0, 0, 0), current: 100, desired: 500, minR: 1, maxR: 200, want: 200, wantReason: ReasonTooManyReplicas},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", up: uniformEvents([]int32{1, 5, 9}, 120),
			upRules: rules(0, 0, 10000, 60, 0), current: 100, desired: 500, minR: 1, maxR: 200, want: 200, wantReason: ReasonTooManyReplicas},
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", up: uniformEvents([]int32{1, 5, 9}, 120),
			upRules: rules(5, 120, 0, 0, 0), current: 100, desired: 500, minR: 1, maxR: 1000, want: 100, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with pod policy and previous scale up events", up: uniformEvents([]int32{1, 5, 9}, 120),
			upRules: rules(150, 120, 0, 0, 0), current: 100, desired: 500, minR: 1, maxR: 1000, want: 235, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy and previous scale up events", up: uniformEvents([]int32{1, 5, 9}, 120),
			upRules: rules(0, 0, 200, 120, 0), current: 100, desired: 500, minR: 1, maxR: 1000, want: 255, wantReason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy and previous scale up and down events", up: uniformEvents([]int32{4}, 120), down: uniformEvents([]int32{2}, 120),
			upRules: rules(0, 0, 300, 300, 0), current: 6, desired: 24, minR: 1, maxR: 1000, want: 16, wantReason: ReasonScaleUpLimit},
		{name: "scaleDown with default policy and previous events", down: uniformEvents([]int32{1, 5, 9}, 120),
			current: 10, desired: 5, minR: 1, maxR: 1000, want: 5, wantReason: ReasonDesiredWithinRange},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", down: uniformEvents([]int32{1, 5, 9}, 120),
			downRules: rules(115, 120, 0, 0, 300), current: 100, desired: 0, minR: 1, maxR: 1000, want: 1, wantReason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", down: uniformEvents([]int32{1, 5, 9}, 120),
			downRules: rules(130, 120, 0, 0, 300), current: 100, desired: 0, minR: 5, maxR: 1000, want: 5, wantReason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", down: uniformEvents([]int32{1, 5, 9}, 120),
			downRules: rules(0, 0, 100, 120, 300), current: 100, desired: 2, minR: 5, maxR: 1000, want: 5, wantReason: ReasonTooFewReplicas},
		{name: "scaleDown with pod policy limitation and previous events", down: uniformEvents([]int32{1, 5, 9}, 120),
			downRules: rules(5, 120, 0, 0, 300), current: 100, desired: 2, minR: 1, maxR: 1000, want: 100, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy limitation and previous events", down: uniformEvents([]int32{2, 4, 6}, 120),
			downRules: rules(0, 0, 50, 120, 300), current: 100, desired: 0, minR: 1, maxR: 1000, want: 56, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy and previous scale up and down events", up: uniformEvents([]int32{2}, 120), down: uniformEvents([]int32{4}, 120),
			downRules: rules(0, 0, 50, 180, 0), current: 10, desired: 1, minR: 1, maxR: 1000, want: 6, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with previous events preventing further scale down", down: uniformEvents([]int32{10, 10, 10}, 120),
			downRules: rules(0, 0, 10, 120, 300), current: 100, desired: 0, minR: 1, maxR: 1000, want: 100, wantReason: ReasonScaleDownLimit},
		{name: "scaleDown with with previous events still allowing more scale down", down: uniformEvents([]int32{10, 10, 10}, 120),
			downRules: rules(0, 0, 1000, 120, 300), current: 10, desired: 5, minR: 1, maxR: 1000, want: 5, wantReason: ReasonDesiredWithinRange},
		{name: "check 'outdated' flag for events for one behavior for up", up: uniformEvents([]int32{8, 12, 9, 11}, 120),
			upRules: rules(1000, 60, 0, 0, 0), current: 100, desired: 200, minR: 1, maxR: 1000, want: 200, wantReason: ReasonDesiredWithinRange},
		{name: "check 'outdated' flag for events for one behavior for down", down: uniformEvents([]int32{8, 12, 9, 11}, 120),
			downRules: rules(1000, 60, 0, 0, 300), current: 100, desired: 5, minR: 1, maxR: 1000, want: 5, wantReason: ReasonDesiredWithinRange},
		// Multiple periods: a 60s policy sees only the last two events
		// (9+11 = 20, period start 80); a 120s policy sees all four (40,
		// period start 60). 10 Pods/60s → 90, 10%/120s → 66: Max picks 90,
		// below current, so no scale-up. 30 Pods/60s → 110 wins under Max;
		// under Min, 110 beats 100%/120s → 120.
		{name: "multiple periods, Max", up: uniformEvents([]int32{8, 12, 9, 11}, 120),
			upRules: rules(10, 60, 10, 120, 0), current: 100, desired: 500, minR: 1, maxR: 1000, want: 100, wantReason: ReasonScaleUpLimit},
		{name: "multiple periods, Max above current", up: uniformEvents([]int32{8, 12, 9, 11}, 120),
			upRules: rules(30, 60, 10, 120, 0), current: 100, desired: 500, minR: 1, maxR: 1000, want: 110, wantReason: ReasonScaleUpLimit},
		{name: "multiple periods, Min", up: uniformEvents([]int32{8, 12, 9, 11}, 120),
			upRules: withSelect(rules(30, 60, 100, 120, 0), autoscalingv2.MinChangePolicySelect), current: 100, desired: 500, minR: 1, maxR: 1000, want: 110, wantReason: ReasonScaleUpLimit},
		// Disabled: no change in that direction; the other direction still scales.
		{name: "scale up disabled", upRules: withSelect(rules(4, 15, 100, 15, 0), autoscalingv2.DisabledPolicySelect),
			current: 5, desired: 9, minR: 1, maxR: 10, want: 5, wantReason: ReasonScaleUpLimit},
		{name: "scale up disabled, scale down allowed", upRules: withSelect(rules(4, 15, 0, 0, 0), autoscalingv2.DisabledPolicySelect),
			current: 5, desired: 3, minR: 1, maxR: 10, want: 3, wantReason: ReasonDesiredWithinRange},
		{name: "scale down disabled", downRules: withSelect(rules(0, 0, 100, 15, 0), autoscalingv2.DisabledPolicySelect),
			current: 5, desired: 1, minR: 1, maxR: 10, want: 5, wantReason: ReasonScaleDownLimit},
		{name: "scale down disabled at min reports TooFewReplicas only below min", downRules: withSelect(rules(0, 0, 100, 15, 0), autoscalingv2.DisabledPolicySelect),
			current: 1, desired: 0, minR: 1, maxR: 10, want: 1, wantReason: ReasonTooFewReplicas},
		// Empty policy list (kept as set): no room in that direction.
		{name: "empty scale-up policy list", upRules: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}},
			current: 5, desired: 9, minR: 1, maxR: 10, want: 5, wantReason: ReasonScaleUpLimit},
		// Percent scale-down truncates: 7 × (1 − 0.5) = 3.5 → 3.
		{name: "percent scale-down truncates", downRules: rules(0, 0, 50, 15, 0), current: 7, desired: 1, minR: 1, maxR: 10, want: 3, wantReason: ReasonScaleDownLimit},
		// Percent scale-up rounds up: 3 × 1.1 = 3.3 → 4.
		{name: "percent scale-up rounds up", upRules: rules(0, 0, 10, 15, 0), current: 3, desired: 9, minR: 1, maxR: 10, want: 4, wantReason: ReasonScaleUpLimit},
		// minReplicas 0 with behavior: down to zero when policies allow.
		{name: "to zero with minReplicas 0", current: 2, desired: 0, minR: 0, maxR: 10, want: 0, wantReason: ReasonDesiredWithinRange},
		// Events exactly one period old no longer count.
		{name: "event exactly at period edge does not count", up: []ScaleEvent{{Change: 4, Timestamp: ago(60 * time.Second)}},
			upRules: rules(4, 60, 0, 0, 0), current: 8, desired: 20, minR: 1, maxR: 100, want: 12, wantReason: ReasonScaleUpLimit},
		{name: "event just inside period counts", up: []ScaleEvent{{Change: 4, Timestamp: ago(60*time.Second - 1)}},
			upRules: rules(4, 60, 0, 0, 0), current: 8, desired: 20, minR: 1, maxR: 100, want: 8, wantReason: ReasonScaleUpLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.upRules, ScaleDown: tc.downRules}
			got := Normalize(Request{
				CurrentReplicas: tc.current, DesiredReplicas: tc.desired, MinReplicas: tc.minR, MaxReplicas: tc.maxR,
				Behavior: b, DownscaleStabilizationWindow: 0, Events: ScaleEvents{Up: tc.up, Down: tc.down}, Now: testNow(),
			})
			if got.Replicas != tc.want || got.ScalingLimited.Reason != tc.wantReason {
				t.Errorf("got %d/%s, want %d/%s", got.Replicas, got.ScalingLimited.Reason, tc.want, tc.wantReason)
			}
			wantStatus := corev1.ConditionFalse
			if got.Replicas != got.Stabilized {
				wantStatus = corev1.ConditionTrue
			}
			if got.ScalingLimited.Status != wantStatus || got.ScalingLimited.Message == "" {
				t.Errorf("ScalingLimited = %+v", got.ScalingLimited)
			}
		})
	}
}

func withSelect(r *autoscalingv2.HPAScalingRules, s autoscalingv2.ScalingPolicySelect) *autoscalingv2.HPAScalingRules {
	r.SelectPolicy = &s
	return r
}

// Upstream TestCalculateScaleUpLimitWithScalingRules and
// TestCalculateScaleDownLimitWithBehaviors (selectPolicy Min).
func TestPolicyLimitsMin(t *testing.T) {
	r := withSelect(rules(2, 60, 50, 60, 300), autoscalingv2.MinChangePolicySelect)
	if got := scaleUpLimit(1, ScaleEvents{}, r, testNow()); got != 2 {
		t.Errorf("scale-up limit = %d, want 2", got)
	}
	if got := scaleDownLimit(5, ScaleEvents{}, r, testNow()); got != 3 {
		t.Errorf("scale-down limit = %d, want 3", got)
	}
}
