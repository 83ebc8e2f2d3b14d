package behavior

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Reasons and messages of the AbleToScale condition set by normalization,
// exactly as upstream.
const (
	ReasonScaleDownStabilized  = "ScaleDownStabilized"
	MessageScaleDownStabilized = "recent recommendations were higher than current one, applying the highest recent recommendation"
	ReasonScaleUpStabilized    = "ScaleUpStabilized"
	MessageScaleUpStabilized   = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	ReasonReadyForNewScale     = "ReadyForNewScale"
	MessageReadyForNewScale    = "recommended size matches current size"
)

// Request is everything normalization reads.
type Request struct {
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// DesiredReplicas is the metrics' proposal (before normalization).
	DesiredReplicas int32
	MinReplicas     int32
	MaxReplicas     int32
	// Behavior selects the rules: nil uses the fixed rules (downscale
	// stabilization and max(2×current, 4)); otherwise it is defaulted with
	// Default and its windows and policies apply.
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	// DownscaleStabilizationWindow is the controller's
	// --horizontal-pod-autoscaler-downscale-stabilization value.
	DownscaleStabilizationWindow time.Duration
	// Recommendations is the history of unstabilized recommendations.
	Recommendations []Recommendation
	// Events is the record of past rescales (used only with Behavior).
	Events ScaleEvents
	Now    time.Time
}

// Outcome is the normalized replica count with its explanation.
type Outcome struct {
	// Replicas is the count to apply.
	Replicas int32
	// Stabilized is the recommendation after stabilization, before policies
	// and bounds.
	Stabilized int32
	// Recommendations is the new history: the input with DesiredReplicas
	// recorded at Now. The caller stores it in place of the old one.
	Recommendations []Recommendation
	// AbleToScale is the AbleToScale=True condition that says whether
	// stabilization changed the recommendation.
	AbleToScale autoscalingv2.HorizontalPodAutoscalerCondition
	// ScalingLimited says which bound applied: Status True when Replicas
	// differs from Stabilized.
	ScalingLimited autoscalingv2.HorizontalPodAutoscalerCondition
}

// Normalize applies stabilization, rate limits and bounds to
// r.DesiredReplicas, as upstream's normalizeDesiredReplicas (r.Behavior nil)
// or normalizeDesiredReplicasWithBehaviors. It never modifies r's slices.
func Normalize(r Request) Outcome {
	if r.Behavior == nil {
		return normalizeFixed(r)
	}
	return normalizeWithBehavior(r)
}

func normalizeFixed(r Request) Outcome {
	stabilized, history := stabilizeDown(r.Recommendations, r.DesiredReplicas, r.DownscaleStabilizationWindow, r.Now)
	able := ableToScale(ReasonReadyForNewScale, MessageReadyForNewScale)
	if stabilized != r.DesiredReplicas {
		able = ableToScale(ReasonScaleDownStabilized, MessageScaleDownStabilized)
	}
	b := clampFixed(r.CurrentReplicas, stabilized, r.MinReplicas, r.MaxReplicas)
	return Outcome{
		Replicas:        b.replicas,
		Stabilized:      stabilized,
		Recommendations: history,
		AbleToScale:     able,
		ScalingLimited:  scalingLimited(b, stabilized),
	}
}

func normalizeWithBehavior(r Request) Outcome {
	b := Default(r.Behavior, r.DownscaleStabilizationWindow)
	w := windows{up: *b.ScaleUp.StabilizationWindowSeconds, down: *b.ScaleDown.StabilizationWindowSeconds}
	stabilized, history := stabilizeBoth(r.Recommendations, r.CurrentReplicas, r.DesiredReplicas, w, r.Now)
	able := ableToScale(ReasonReadyForNewScale, MessageReadyForNewScale)
	switch {
	case stabilized == r.DesiredReplicas:
	case r.DesiredReplicas >= r.CurrentReplicas:
		able = ableToScale(ReasonScaleUpStabilized, MessageScaleUpStabilized)
	default:
		able = ableToScale(ReasonScaleDownStabilized, MessageScaleDownStabilized)
	}
	limited := clampWithRules(r.CurrentReplicas, stabilized, r.MinReplicas, r.MaxReplicas, b, r.Events, r.Now)
	return Outcome{
		Replicas:        limited.replicas,
		Stabilized:      stabilized,
		Recommendations: history,
		AbleToScale:     able,
		ScalingLimited:  scalingLimited(limited, stabilized),
	}
}

func ableToScale(reason, message string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.AbleToScale,
		Status:  corev1.ConditionTrue,
		Reason:  reason,
		Message: message,
	}
}

func scalingLimited(b bound, stabilized int32) autoscalingv2.HorizontalPodAutoscalerCondition {
	status := corev1.ConditionFalse
	if b.replicas != stabilized {
		status = corev1.ConditionTrue
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScalingLimited,
		Status:  status,
		Reason:  b.reason,
		Message: b.message,
	}
}
