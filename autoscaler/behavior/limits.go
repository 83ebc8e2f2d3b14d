package behavior

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Reasons and messages of the ScalingLimited condition, exactly as upstream.
const (
	ReasonTooFewReplicas      = "TooFewReplicas"
	MessageTooFewReplicas     = "the desired replica count is less than the minimum replica count"
	ReasonTooManyReplicas     = "TooManyReplicas"
	MessageTooManyReplicas    = "the desired replica count is more than the maximum replica count"
	ReasonScaleUpLimit        = "ScaleUpLimit"
	MessageScaleUpLimit       = "the desired replica count is increasing faster than the maximum scale rate"
	ReasonScaleDownLimit      = "ScaleDownLimit"
	MessageScaleDownLimit     = "the desired replica count is decreasing faster than the maximum scale rate"
	ReasonDesiredWithinRange  = "DesiredWithinRange"
	MessageDesiredWithinRange = "the desired count is within the acceptable range"
)

// bound is a limited replica count and the reason and message naming the
// bound that applied (DesiredWithinRange when none did).
type bound struct {
	replicas        int32
	reason, message string
}

func withinRange(desired int32) bound {
	return bound{desired, ReasonDesiredWithinRange, MessageDesiredWithinRange}
}

// fixedScaleUpLimit is upstream's calculateScaleUpLimit: max(2×current, 4).
func fixedScaleUpLimit(current int32) int32 {
	return int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
}

// clampFixed is upstream's convertDesiredReplicasWithRules (no behavior).
func clampFixed(current, desired, minReplicas, maxReplicas int32) bound {
	upper := bound{maxReplicas, ReasonTooManyReplicas, MessageTooManyReplicas}
	if limit := fixedScaleUpLimit(current); maxReplicas > limit {
		upper = bound{limit, ReasonScaleUpLimit, MessageScaleUpLimit}
	}
	if desired < minReplicas {
		return bound{minReplicas, ReasonTooFewReplicas, MessageTooFewReplicas}
	}
	if desired > upper.replicas {
		return upper
	}
	return withinRange(desired)
}

// clampWithRules is upstream's convertDesiredReplicasWithBehaviorRate: the
// policy limit of the direction of change, never past current, combined with
// the bound of that direction.
func clampWithRules(current, desired, minReplicas, maxReplicas int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, ev ScaleEvents, now time.Time) bound {
	switch {
	case desired > current:
		limit := max(scaleUpLimit(current, ev, b.ScaleUp, now), current)
		upper := bound{maxReplicas, ReasonTooManyReplicas, MessageTooManyReplicas}
		if maxReplicas > limit {
			upper = bound{limit, ReasonScaleUpLimit, MessageScaleUpLimit}
		}
		if desired > upper.replicas {
			return upper
		}
	case desired < current:
		limit := min(scaleDownLimit(current, ev, b.ScaleDown, now), current)
		lower := bound{minReplicas, ReasonTooFewReplicas, MessageTooFewReplicas}
		if minReplicas < limit {
			lower = bound{limit, ReasonScaleDownLimit, MessageScaleDownLimit}
		}
		if desired < lower.replicas {
			return lower
		}
	}
	return withinRange(desired)
}

// periodStart is the replica count at the start of a policy's period:
// current minus what was added plus what was removed within it.
func periodStart(current int32, ev ScaleEvents, periodSeconds int32, now time.Time) int32 {
	return current - changeInPeriod(periodSeconds, ev.Up, now) + changeInPeriod(periodSeconds, ev.Down, now)
}

// scaleUpLimit is the highest count the scale-up policies allow: Max picks
// the largest proposal, Min the smallest, Disabled keeps current.
func scaleUpLimit(current int32, ev ScaleEvents, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	pick, result := larger, int32(math.MinInt32)
	switch selectPolicy(rules) {
	case autoscalingv2.DisabledPolicySelect:
		return current
	case autoscalingv2.MinChangePolicySelect:
		pick, result = smaller, math.MaxInt32
	}
	var proposed int32 // kept across policies, as upstream
	for _, p := range rules.Policies {
		start := periodStart(current, ev, p.PeriodSeconds, now)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is the lowest count the scale-down policies allow: Max
// picks the largest change (lowest count), Min the smallest, Disabled keeps
// current. Percent proposals truncate toward zero, as upstream.
func scaleDownLimit(current int32, ev ScaleEvents, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	pick, result := smaller, int32(math.MaxInt32)
	switch selectPolicy(rules) {
	case autoscalingv2.DisabledPolicySelect:
		return current
	case autoscalingv2.MinChangePolicySelect:
		pick, result = larger, math.MinInt32
	}
	var proposed int32 // kept across policies, as upstream
	for _, p := range rules.Policies {
		start := periodStart(current, ev, p.PeriodSeconds, now)
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func selectPolicy(rules *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if rules.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *rules.SelectPolicy
}

func larger(a, b int32) int32  { return max(a, b) }
func smaller(a, b int32) int32 { return min(a, b) }
