package behavior

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// DefaultDownscaleStabilizationWindow is kube-controller-manager's default
// --horizontal-pod-autoscaler-downscale-stabilization.
const DefaultDownscaleStabilizationWindow = 5 * time.Minute

// Upstream's fixed scale-up limit without behavior: max(2×current, 4).
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// Default returns a fully populated copy of b, as the API server's defaulting
// and the controller together make it: unset scale-up fields take a 0s window,
// policies {4 Pods/15s, 100 Percent/15s} and selectPolicy Max; unset
// scale-down fields take a window of downscaleStabilizationWindow (truncated
// to whole seconds), policy {100 Percent/15s} and selectPolicy Max. Set fields,
// including an explicitly empty policy list and tolerances, are kept.
//
// A nil b returns nil: an autoscaler without behavior uses the fixed rules
// instead. The result shares no memory with b.
func Default(b *autoscalingv2.HorizontalPodAutoscalerBehavior, downscaleStabilizationWindow time.Duration) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   fillRules(b.ScaleUp, defaultScaleUpRules()),
		ScaleDown: fillRules(b.ScaleDown, defaultScaleDownRules(downscaleStabilizationWindow)),
	}
}

func defaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	window := int32(0)
	selectMax := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		SelectPolicy:               &selectMax,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

func defaultScaleDownRules(window time.Duration) *autoscalingv2.HPAScalingRules {
	seconds := int32(window.Seconds())
	selectMax := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &seconds,
		SelectPolicy:               &selectMax,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// fillRules overwrites the fields of def with the set fields of from (deep
// copies) and returns def.
func fillRules(from, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return def
	}
	c := from.DeepCopy()
	if c.SelectPolicy != nil {
		def.SelectPolicy = c.SelectPolicy
	}
	if c.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = c.StabilizationWindowSeconds
	}
	if c.Policies != nil {
		def.Policies = c.Policies
	}
	if c.Tolerance != nil {
		def.Tolerance = c.Tolerance
	}
	return def
}
