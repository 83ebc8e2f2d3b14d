package evaluation

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// Extensions is the extensions an autoscaler sets. The zero Extensions sets
// none.
type Extensions struct {
	// Paused: never write the scale.
	Paused bool
	// DryRun: record what would be done, never write the scale.
	DryRun bool
	// ScaleToZero and Fallback configure the proposal extensions (see
	// applyProposalExtensions); nil: off.
	ScaleToZero *ScaleToZero
	Fallback    *Fallback
}

// Defaults of the extensions' durations.
const (
	DefaultScaleToZeroAfter = 5 * time.Minute
	DefaultFallbackAfter    = time.Minute
)

// FallbackPolicy is what the fallback does (see v1alpha1.FallbackPolicy).
type FallbackPolicy string

// Fallback policies.
const (
	FallbackHold     FallbackPolicy = "Hold"
	FallbackReplicas FallbackPolicy = "Replicas"
	FallbackAtLeast  FallbackPolicy = "AtLeast"
)

// Fallback configures the fallback; nil in Spec means none.
type Fallback struct {
	Policy   FallbackPolicy
	Replicas int32
	// After is how long a metric must be failed or stale (0: default).
	After time.Duration
	// MaxAge is the oldest a sample may be (0: not checked).
	MaxAge time.Duration
}

// ScaleToZero configures scaling to zero; nil in Spec means none.
type ScaleToZero struct {
	// After is how long every metric must be idle (0: default).
	After time.Duration
}

func cond(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, msg string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: msg}
}
