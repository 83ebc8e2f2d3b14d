package evaluation

import (
	"fmt"
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

// Condition types the extensions report.
const (
	ConditionPaused autoscalingv2.HorizontalPodAutoscalerConditionType = "Paused"
	ConditionDryRun autoscalingv2.HorizontalPodAutoscalerConditionType = "DryRun"
)

// Stages name the extensions in decision records.
const (
	StagePaused = "Paused"
	StageDryRun = "DryRun"
)

// Reasons why a decided change is not written.
const (
	HoldPaused = "paused"
	HoldDryRun = "dry-run"
)

// holdInput is what the extensions read.
type holdInput struct {
	Spec Extensions
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// Desired and Rescale are the decision's: the count decided and whether
	// it differs from CurrentReplicas.
	Desired int32
	Rescale bool
	// Failed is true when no decision was possible; the extensions then
	// only report their conditions.
	Failed bool
}

// extensionStep is one change an extension made, for the decision record.
type extensionStep struct {
	Stage    string
	From, To int32
	Message  string
}

// held is the adjusted decision.
type held struct {
	// Desired is the count for status.desiredReplicas and the record.
	Desired int32
	// Rescale is true when Desired differs from the current count.
	Rescale bool
	// Write is true when the scale must be written (Rescale and not held).
	Write bool
	// Hold says why a rescale is not written ("" when it is, or when there
	// is none): HoldPaused or HoldDryRun.
	Hold string
	// Steps are the extensions' changes, in order.
	Steps []extensionStep
	// Conditions are the extensions' conditions, each True when the
	// extension is on and False when it is off; the controller sets a False
	// one only when the status already holds that condition.
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	// Events are to be recorded on the autoscaler.
	Events []Event
}

// applyHolds runs the extensions in order (see the package doc). It is pure.
func applyHolds(in holdInput) held {
	r := unheld(in)
	paused(in, &r)
	dryRun(in, &r)
	return r
}

// paused holds every write; the decision is still reported.
func paused(in holdInput, r *held) {
	if !in.Spec.Paused {
		r.Conditions = append(r.Conditions, cond(ConditionPaused, corev1.ConditionFalse, "NotPaused", "scale writes are not paused"))
		return
	}
	msg := "scale writes are paused"
	if r.holdBack(HoldPaused, StagePaused, in.CurrentReplicas, "paused: the scale is not written") {
		msg = fmt.Sprintf("scale writes are paused; would scale from %d to %d", in.CurrentReplicas, r.Desired)
	}
	r.Conditions = append(r.Conditions, cond(ConditionPaused, corev1.ConditionTrue, "Paused", msg))
}

// dryRun holds every write and announces what a live run would write.
func dryRun(in holdInput, r *held) {
	if !in.Spec.DryRun {
		r.Conditions = append(r.Conditions, cond(ConditionDryRun, corev1.ConditionFalse, "DryRunOff", "decisions are applied"))
		return
	}
	msg := "dry run: decisions are recorded, never applied"
	if r.holdBack(HoldDryRun, StageDryRun, in.CurrentReplicas, "dry run: the scale is not written") {
		msg = fmt.Sprintf("dry run: would scale from %d to %d", in.CurrentReplicas, r.Desired)
		r.Events = append(r.Events, Event{Type: corev1.EventTypeNormal, Reason: "DryRunRescale",
			Message: fmt.Sprintf("would scale from %d to %d", in.CurrentReplicas, r.Desired)})
	}
	r.Conditions = append(r.Conditions, cond(ConditionDryRun, corev1.ConditionTrue, "DryRun", msg))
}

// holdBack holds back the pending write, if any, for the reason hold and
// records the step of stage, from the decided count back to current. It
// reports whether there was a write to hold back (an earlier extension may
// have held it already).
func (r *held) holdBack(hold, stage string, current int32, message string) bool {
	if !r.Write {
		return false
	}
	r.Write, r.Hold = false, hold
	r.Steps = append(r.Steps, extensionStep{Stage: stage, From: r.Desired, To: current, Message: message})
	return true
}
