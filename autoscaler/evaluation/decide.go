package evaluation

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
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

// Override is what an extension proposes in place of the running
// proposal (stages.go), before the behavior, so that the result still goes
// through stabilization, the scaling policies and the bounds.
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
	// the Memory's to keep.
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
}

// Upstream's stages of the decision (stages.go lists them with the
// extensions'), as its reconcile: the bounds (Check), the maximum of the
// metrics' proposals (combine), the behavior (behavior.Normalize) and the
// floor to minReplicas when scaling from zero after the autoscaler scaled
// to zero.

// gate is upstream's check before metrics (Check): at zero replicas, above
// max or below min the count is decided without metrics.
func (r *Result) gate(p proposal) (proposal, []v1alpha1.DecisionStep) {
	d, cur := &r.Decision, r.bounds.CurrentReplicas
	d.Gate = Check(r.bounds)
	switch d.Gate.Action {
	case ScalingDisabled:
		c := scalingActive(corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		d.ScalingActive, d.Desired = &c, cur
		r.set(c, r.in.Now)
		return decided(cur, false), []v1alpha1.DecisionStep{
			step(StageScalingDisabled, cur, cur, "the target has zero replicas and the autoscaler did not scale it to zero")}
	case ClampToBounds:
		d.Desired, d.Rescale, d.RescaleReason = d.Gate.Desired, true, d.Gate.Reason
		stage := StageMaxReplicas
		if d.Gate.Desired > cur {
			stage = StageMinReplicas
		}
		return decided(d.Desired, true), []v1alpha1.DecisionStep{step(stage, cur, d.Desired, d.Gate.Reason)}
	}
	return p, nil
}

// metrics proposes a count per metric (propose.go; the ClusterProportional
// ones after the HPA metrics', proportional.go) and combines them.
func (r *Result) metrics(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if p.Decided {
		return p, nil
	}
	if r.in.InputsErr == nil {
		var extra []Proposal
		var recs []Metric
		if len(r.in.Spec.Proportional) > 0 {
			extra, recs = r.proportional()
		}
		r.proposals = r.propose(extra)
		r.Metrics = append(r.Metrics, recs...)
	}
	return r.combine(p)
}

// combine is upstream's maximum over the metrics' proposals
// (computeReplicasForMetrics) with its events and ScalingActive condition;
// its step is a winning proposal the tolerance held at the current count.
// Without the pods (Input.InputsErr) no metric was read: the decision
// fails.
func (r *Result) combine(p proposal) (proposal, []v1alpha1.DecisionStep) {
	in, d, cur := &r.in, &r.Decision, r.bounds.CurrentReplicas
	switch {
	case p.Decided:
		return p, nil
	case in.InputsErr != nil:
		if se, ok := in.InputsErr.(*SelectorError); ok {
			r.warn(se.EventReason, se.Message)
			r.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, se.ConditionReason, se.ConditionMessage), in.Now)
		}
		d.Failed, d.Desired, d.Err = true, cur, in.InputsErr
		return decided(cur, false), nil
	}
	agg := combine(r.proposals, cur)
	d.Aggregate, d.ScalingActive, d.Err = &agg, &agg.ScalingActive, agg.Err
	for _, m := range r.Metrics[:min(len(r.Metrics), len(in.Readings))] {
		if p := m.Evaluated.Proposal; p.Err != nil {
			r.warn(p.Condition.Reason, strings.TrimPrefix(p.Condition.Message, failurePrefix))
		}
	}
	r.set(agg.ScalingActive, in.Now)
	p = proposal{Replicas: max(agg.Replicas, 0), Usable: agg.Usable}
	if w := r.winner(); w != nil {
		if t, ok := toleranceStep(w, cur); ok {
			return p, []v1alpha1.DecisionStep{t}
		}
	}
	return p, nil
}

// normalize is upstream's behavior (behavior.Normalize: stabilization, the
// scaling policies, the bounds) on the proposal; its steps are the
// stabilization and the limit that changed it. A proposal the metrics
// allow no decision on fails; a Hold keeps the current count.
func (r *Result) normalize(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if p.Decided {
		return p, nil
	}
	d, cur := &r.Decision, r.bounds.CurrentReplicas
	if !p.Usable {
		d.Failed = true
		return decided(0, false), nil
	}
	if p.Hold {
		d.Desired = cur
		return decided(cur, false), nil
	}
	desired, reason := max(p.Replicas, 0), ""
	switch {
	case p.Override != nil && desired != cur:
		reason = p.Override.Message
	case desired > cur:
		metric := ""
		if d.Aggregate.Replicas > 0 {
			metric = d.Aggregate.Metric
		}
		reason = fmt.Sprintf("%s above target", metric)
	case desired < cur:
		reason = ReasonAllMetricsBelow
	}
	req := r.request
	req.CurrentReplicas, req.DesiredReplicas = cur, desired
	req.MinReplicas, req.MaxReplicas = r.bounds.MinReplicas, r.bounds.MaxReplicas
	out := behavior.Normalize(req)
	d.Outcome, d.RescaleReason = &out, reason
	r.set(out.AbleToScale, r.in.Now)
	r.set(out.ScalingLimited, r.in.Now)
	var steps []v1alpha1.DecisionStep
	if out.Stabilized != desired {
		stage := StageScaleDownStabilization
		if out.AbleToScale.Reason == behavior.ReasonScaleUpStabilized {
			stage = StageScaleUpStabilization
		}
		steps = append(steps, step(stage, desired, out.Stabilized, out.AbleToScale.Message))
	}
	if out.ScalingLimited.Status == corev1.ConditionTrue {
		b := r.request.Behavior
		steps = append(steps, step(limitStage(out.ScalingLimited.Reason, b), out.Stabilized, out.Replicas,
			out.ScalingLimited.Message+policies(out.ScalingLimited.Reason, b)))
	}
	return proposal{Replicas: out.Replicas, Usable: true}, steps
}

// fromZero is upstream's floor to minReplicas when the autoscaler scales up
// from zero after having scaled to zero; it concludes a decision the
// behavior normalized.
func (r *Result) fromZero(p proposal) (proposal, []v1alpha1.DecisionStep) {
	d, b := &r.Decision, r.bounds
	if p.Decided || d.Outcome == nil {
		return p, nil
	}
	desired := p.Replicas
	var steps []v1alpha1.DecisionStep
	if b.CurrentReplicas == 0 && b.MinReplicas != 0 && b.ScaledToZero && desired < b.MinReplicas {
		steps = append(steps, step(StageScaleFromZero, desired, b.MinReplicas, "scaling up from zero replicas: at least minReplicas"))
		desired, d.FromZeroFloor = b.MinReplicas, true
		if d.RescaleReason == "" {
			d.RescaleReason = ReasonBelowMin
		}
	}
	d.Rescale, d.Desired = desired != b.CurrentReplicas, desired
	if !d.Rescale {
		d.Desired = b.CurrentReplicas
	}
	return decided(d.Desired, d.Rescale), steps
}

// toleranceStep reports a winning proposal held at the current count by the
// tolerance (or by the conservative recomputation for missing pods): from is
// the count the ratio alone would give.
func toleranceStep(w *Metric, current int32) (v1alpha1.DecisionStep, bool) {
	res := w.Evaluated.Result
	switch res.Reason {
	case replicas.ReasonWithinTolerance, replicas.ReasonRecomputedWithinTolerance,
		replicas.ReasonRecomputedDirectionFlip, replicas.ReasonRecomputedCountFlip:
	default:
		return v1alpha1.DecisionStep{}, false
	}
	raw := current
	if r := res.UsageRatio * float64(current); r > 0 && r < math.MaxInt32 {
		raw = int32(math.Ceil(r))
	}
	msg := fmt.Sprintf("usage ratio %.3f within tolerance (down %.2f, up %.2f): %s",
		res.UsageRatio, res.Tolerances.ScaleDown, res.Tolerances.ScaleUp, res.Reason.Describe())
	if res.Reason != replicas.ReasonWithinTolerance {
		msg = fmt.Sprintf("usage ratio %.3f: %s", res.UsageRatio, res.Reason.Describe())
	}
	return step(StageTolerance, raw, current, msg), true
}

// behaviorSteps are the stages of the steps normalize may add.
var behaviorSteps = []string{StageScaleUpStabilization, StageScaleDownStabilization,
	StageScaleUpLimit, StageScaleUpPolicy, StageScaleDownPolicy, StageMinReplicas, StageMaxReplicas}

func limitStage(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	switch reason {
	case behavior.ReasonTooFewReplicas:
		return StageMinReplicas
	case behavior.ReasonTooManyReplicas:
		return StageMaxReplicas
	case behavior.ReasonScaleUpLimit:
		if b == nil {
			return StageScaleUpLimit
		}
		return StageScaleUpPolicy
	case behavior.ReasonScaleDownLimit:
		return StageScaleDownPolicy
	}
	return reason
}

// policies describes the policies of the limiting direction, e.g.
// " (policies: Percent 100 per 15s, Pods 4 per 15s; selectPolicy Max)".
func policies(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	if reason == behavior.ReasonScaleUpLimit && b == nil {
		return " (without behavior: at most max(2×current, 4))"
	}
	if b == nil {
		return ""
	}
	rules := b.ScaleUp
	if reason == behavior.ReasonScaleDownLimit {
		rules = b.ScaleDown
	} else if reason != behavior.ReasonScaleUpLimit {
		return ""
	}
	if rules == nil || len(rules.Policies) == 0 {
		return " (default policies)"
	}
	parts := make([]string, len(rules.Policies))
	for i, p := range rules.Policies {
		parts[i] = fmt.Sprintf("%s %d per %ds", p.Type, p.Value, p.PeriodSeconds)
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	return fmt.Sprintf(" (policies: %s; selectPolicy %s)", strings.Join(parts, ", "), sel)
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
