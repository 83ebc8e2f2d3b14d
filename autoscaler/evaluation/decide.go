package evaluation

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
)

// Rescale reasons, as upstream words them in its SuccessfulRescale events.
const (
	ReasonAboveMax        = "Current number of replicas above Spec.MaxReplicas"
	ReasonBelowMin        = "Current number of replicas below Spec.MinReplicas"
	ReasonAllMetricsBelow = "All metrics below target"
)

// GateAction is what the bounds check decides before any metric is read.
type GateAction string

// Gate actions.
const (
	// ComputeMetrics: read the metrics and decide from them.
	ComputeMetrics GateAction = "ComputeMetrics"
	// ScalingDisabled: the target sits at zero replicas and may not be scaled
	// from there; leave it alone.
	ScalingDisabled GateAction = "ScalingDisabled"
	// ClampToBounds: the target is outside [min, max]; move it to the bound
	// without reading metrics.
	ClampToBounds GateAction = "ClampToBounds"
)

// Bounds are the facts the gate reads.
type Bounds struct {
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// MinReplicas is spec.minReplicas, 1 when unset.
	MinReplicas int32
	MaxReplicas int32
	// ScaledToZero is true when the autoscaler's status holds ScaledToZero=True
	// (HPAScaleToZero is on by default in v1.37).
	ScaledToZero bool
	// HasObjectOrExternal is true when a metric is of type Object or External.
	HasObjectOrExternal bool
}

// Gate is the outcome of the bounds check.
type Gate struct {
	Action GateAction
	// Desired is the bound to move to (ClampToBounds only).
	Desired int32
	// Reason is the rescale reason (ClampToBounds only).
	Reason string
}

// Check is upstream's check before metrics: at zero replicas, metrics are read
// only if the autoscaler itself scaled to zero (ScaledToZero) and either
// minReplicas is not zero or an Object/External metric can wake it; otherwise
// scaling is disabled. Above max or below min, the count moves to the bound.
func Check(b Bounds) Gate {
	switch {
	case b.CurrentReplicas == 0:
		if (b.MinReplicas != 0 && b.ScaledToZero) || (b.ScaledToZero && b.HasObjectOrExternal) {
			return Gate{Action: ComputeMetrics}
		}
		return Gate{Action: ScalingDisabled}
	case b.CurrentReplicas > b.MaxReplicas:
		return Gate{Action: ClampToBounds, Desired: b.MaxReplicas, Reason: ReasonAboveMax}
	case b.CurrentReplicas < b.MinReplicas:
		return Gate{Action: ClampToBounds, Desired: b.MinReplicas, Reason: ReasonBelowMin}
	}
	return Gate{Action: ComputeMetrics}
}

// decideInput is everything decide reads.
type decideInput struct {
	Bounds
	// Gate is Check(Bounds) when the caller already ran it (to know whether
	// to read metrics); nil makes Decide run Check itself.
	Gate *Gate
	// Proposals are the per-metric outcomes, in spec order; read only when
	// Check says ComputeMetrics.
	Proposals []Proposal
	// Normalize carries the behavior, downscale window, histories and time;
	// Decide fills its replica fields from Bounds and the proposals.
	Normalize behavior.Request
	// Override, when set, is asked with the combined proposals before
	// normalization and may replace them (the extensions that act on the
	// proposal, package adjust); nil keeps upstream's decision.
	Override func(Aggregate) *Override
}

// Override replaces the combined proposal of the metrics before
// normalization, so that the result still goes through stabilization, the
// scaling policies and the bounds.
type Override struct {
	// Replicas is the proposal to normalize.
	Replicas int32
	// Hold keeps the current replicas, without normalizing.
	Hold bool
	// Stage names the extension; Message explains the override (also the
	// rescale reason).
	Stage, Message string
}

// Decision is the replica decision and what explains it.
type Decision struct {
	Gate Gate
	// Aggregate is set when metrics were combined.
	Aggregate *Aggregate
	// Outcome is set when the count was normalized; its Recommendations are
	// the history to store.
	Outcome *behavior.Outcome
	// Failed is true when the metrics allow no decision: do not scale, keep
	// the previous status.desiredReplicas, report Err.
	Failed bool
	// Desired is the count for status.desiredReplicas (CurrentReplicas when
	// not rescaling).
	Desired int32
	// Rescale is true when the scale must be written.
	Rescale bool
	// RescaleReason explains the rescale (for the SuccessfulRescale event).
	RescaleReason string
	// ScalingActive is the condition to set, if any (nil: leave as is).
	ScalingActive *autoscalingv2.HorizontalPodAutoscalerCondition
	// Err is the metrics error: when Failed, the reason not to scale; else
	// some metrics failed but the decision stands (upstream still returns the
	// error after scaling).
	Err error
	// FromZeroFloor is true when the count was raised to minReplicas because
	// the autoscaler scales up from zero after having scaled to zero.
	FromZeroFloor bool
	// Override is the override applied, if any.
	Override *Override
}

// decide is upstream's reconcile decision: Check (unless the caller ran
// it), then Combine, the maximum with zero, the override of the proposal
// extensions, behavior.Normalize, and the floor to minReplicas when scaling
// from zero after the autoscaler scaled to zero.
func decide(in decideInput) Decision {
	gate := Check(in.Bounds)
	if in.Gate != nil {
		gate = *in.Gate
	}
	d := Decision{Gate: gate}
	switch d.Gate.Action {
	case ScalingDisabled:
		c := scalingActive(corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		d.ScalingActive, d.Desired = &c, in.CurrentReplicas
		return d
	case ClampToBounds:
		d.Desired, d.Rescale, d.RescaleReason = d.Gate.Desired, true, d.Gate.Reason
		return d
	}
	agg := combine(in.Proposals, in.CurrentReplicas)
	d.Aggregate, d.ScalingActive, d.Err = &agg, &agg.ScalingActive, agg.Err
	if in.Override != nil {
		d.Override = in.Override(agg)
	}
	if !agg.Usable && d.Override == nil {
		d.Failed = true
		return d
	}
	desired, reason := max(agg.Replicas, 0), ""
	if o := d.Override; o != nil {
		if o.Hold {
			d.Desired = in.CurrentReplicas
			return d
		}
		desired = max(o.Replicas, 0)
	}
	switch {
	case d.Override != nil && desired != in.CurrentReplicas:
		reason = d.Override.Message
	case desired > in.CurrentReplicas:
		metric := ""
		if agg.Replicas > 0 {
			metric = agg.Metric
		}
		reason = fmt.Sprintf("%s above target", metric)
	case desired < in.CurrentReplicas:
		reason = ReasonAllMetricsBelow
	}
	req := in.Normalize
	req.CurrentReplicas, req.DesiredReplicas = in.CurrentReplicas, desired
	req.MinReplicas, req.MaxReplicas = in.MinReplicas, in.MaxReplicas
	out := behavior.Normalize(req)
	d.Outcome = &out
	desired = out.Replicas
	if in.CurrentReplicas == 0 && in.MinReplicas != 0 && in.ScaledToZero && desired < in.MinReplicas {
		desired, d.FromZeroFloor = in.MinReplicas, true
		if reason == "" {
			reason = ReasonBelowMin
		}
	}
	d.Rescale, d.RescaleReason, d.Desired = desired != in.CurrentReplicas, reason, desired
	if !d.Rescale {
		d.Desired = in.CurrentReplicas
	}
	return d
}

// scaledToZeroCondition is the ScaledToZero condition upstream sets after every
// successful rescale: True when the autoscaler took the workload from some
// replicas to zero with minReplicas 0 and an Object or External metric.
func scaledToZeroCondition(current, desired, minReplicas int32, hasObjectOrExternal bool) autoscalingv2.HorizontalPodAutoscalerCondition {
	c := autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScaledToZero,
		Status:  corev1.ConditionFalse,
		Reason:  "NotScaledToZero",
		Message: "the HPA controller did not scale the workload to zero",
	}
	if current > 0 && desired == 0 && minReplicas == 0 && hasObjectOrExternal {
		c.Status, c.Reason, c.Message = corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero"
	}
	return c
}

// hasObjectOrExternal reports whether any metric is of type Object or
// External (the metrics that can wake a workload at zero replicas).
func hasObjectOrExternal(metrics []autoscalingv2.MetricSpec) bool {
	for _, m := range metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

// ErrNoMetrics: an autoscaler with no metrics. Upstream cannot reach this (the
// API server defaults metrics to 80% cpu); here it stops scaling.
var ErrNoMetrics = errors.New("no metrics to compute a replica count from")

// Proposal is one metric's outcome.
type Proposal struct {
	// Metric describes the metric (see metricDescription).
	Metric    string
	Replicas  int32
	Timestamp time.Time
	// Err is non-nil when the metric failed; Replicas is then ignored.
	Err error
	// Condition is the ScalingActive=False condition reported when this is the
	// first failed metric (see failure).
	Condition autoscalingv2.HorizontalPodAutoscalerCondition
}

// Aggregate is the combination of all proposals.
type Aggregate struct {
	// Replicas, Metric and Timestamp come from the winning proposal.
	Replicas  int32
	Metric    string
	Timestamp time.Time
	// Invalid counts failed proposals; FirstFailure is the index of the first
	// one, or -1.
	Invalid      int
	FirstFailure int
	// Err is non-nil when any proposal failed, wrapping the first error.
	Err error
	// Usable is false when no scaling may happen: every metric failed, or
	// some failed and Replicas is below the spec replicas.
	Usable bool
	// ScalingActive is the condition to set: True/ValidMetricFound when
	// Usable, else the first failure's condition.
	ScalingActive autoscalingv2.HorizontalPodAutoscalerCondition
}

// combine takes the maximum over the successful proposals, as upstream's
// computeReplicasForMetrics. Ties keep the earlier metric, except that a
// running maximum of zero is replaced by any later proposal (so among
// proposals that are all zero the last one names the metric).
func combine(proposals []Proposal, specReplicas int32) Aggregate {
	a := Aggregate{FirstFailure: -1}
	if len(proposals) == 0 {
		a.Err = ErrNoMetrics
		a.ScalingActive = scalingActive(corev1.ConditionFalse, "NoMetrics",
			fmt.Sprintf("the HPA was unable to compute the replica count: %v", ErrNoMetrics))
		return a
	}
	for i, p := range proposals {
		if p.Err != nil {
			if a.Invalid == 0 {
				a.FirstFailure = i
			}
			a.Invalid++
			continue
		}
		if a.Replicas == 0 || p.Replicas > a.Replicas {
			a.Replicas, a.Metric, a.Timestamp = p.Replicas, p.Metric, p.Timestamp
		}
	}
	if a.Invalid > 0 {
		a.Err = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w",
			a.Invalid, len(proposals), proposals[a.FirstFailure].Err)
	}
	if a.Invalid >= len(proposals) || (a.Invalid > 0 && a.Replicas < specReplicas) {
		a.ScalingActive = proposals[a.FirstFailure].Condition
		return a
	}
	a.Usable = true
	a.ScalingActive = scalingActive(corev1.ConditionTrue, "ValidMetricFound",
		fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s", a.Metric))
	return a
}

func scalingActive(status corev1.ConditionStatus, reason, message string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScalingActive,
		Status:  status,
		Reason:  reason,
		Message: message,
	}
}

// setCondition sets c in status, as upstream: the condition is appended when
// absent, its transition time moves only when the status changes, and
// reason and message are overwritten.
func setCondition(status *autoscalingv2.HorizontalPodAutoscalerStatus, c autoscalingv2.HorizontalPodAutoscalerCondition, now metav1.Time) {
	for i := range status.Conditions {
		existing := &status.Conditions[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status != c.Status {
			existing.LastTransitionTime = now
		}
		existing.Status, existing.Reason, existing.Message = c.Status, c.Reason, c.Message
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}

func condition(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason, message string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// conditionTrue reports whether status holds condition t with status True.
func conditionTrue(status autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hasCondition reports whether status holds a condition of type t.
func hasCondition(status autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) bool {
	for _, c := range status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
