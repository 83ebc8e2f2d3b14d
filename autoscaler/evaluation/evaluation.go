package evaluation

import (
	"fmt"
	"maps"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
)

// Event is an event to record on the autoscaler.
type Event struct {
	Type, Reason, Message string
}

// Metric is one metric of an evaluation: its reading and what it proposed.
type Metric struct {
	Reading   Reading
	Evaluated Evaluated
	// Name and Reason, when set, replace the name derived from the spec (see
	// MetricName) and the reason of the calculation (ClusterProportional
	// metrics, which are not HPA metrics).
	Name, Reason string
}

// Result is the outcome of one evaluation. When Write is true the caller
// writes Desired to the target's /scale and then calls Written with the
// outcome; until then Status, Events, Err and the record describe an
// evaluation that has not written.
type Result struct {
	// Metrics has every metric's reading and proposal: the HPA metrics in
	// spec order, then the ClusterProportional ones (empty when none was
	// read).
	Metrics []Metric
	// Decision is upstream's decision (with the proposal extensions'
	// override).
	Decision Decision
	// Write is true when the scale must be written with Desired (a rescale
	// that no extension holds back).
	Write   bool
	Desired int32
	// Status is the autoscaler's new status; ProportionalStatus the
	// ClusterProportional entries (ProportionalChanged when they differ from
	// the input's).
	Status              autoscalingv2.HorizontalPodAutoscalerStatus
	ProportionalStatus  map[int]v1alpha1.ClusterProportionalStatus
	ProportionalChanged bool
	// ScaleEvents are the rescales to store (ScaleEventsChanged: they differ
	// from the input's, which only a rescale does).
	ScaleEvents        string
	ScaleEventsChanged bool
	// Events are to be recorded on the autoscaler, in order.
	Events []Event
	// Outline is the decision record without its metrics and messages
	// (Signature reads it); Record builds the whole one.
	Outline v1alpha1.DecisionRecord
	// Err is the evaluation's failure (scale read, metrics, scale write), if
	// any. Decision.Err may still report failed metrics of a decision that
	// stands (upstream reports it after acting).
	Err error
	// FallbackActive is true while the fallback applies.
	FallbackActive bool
	// Floor is the schedules' floor at Now (schedule.go).
	Floor Floor
	// Scaled is true when Written was told of a successful write.
	Scaled bool

	in         Input
	statuses   []autoscalingv2.MetricStatus
	propStatus map[int]v1alpha1.ClusterProportionalStatus
	ext        proposalResult
	holds      held
	// forecastOutcomes are the metrics' forecasts (forecast.go).
	forecastOutcomes []forecastOutcome
}

// ReadsMetrics reports whether an evaluation of in reads the pods and the
// metrics: the scale was read and the bounds let the metrics decide. It reads
// Spec, Status and Scale.
func ReadsMetrics(in *Input) bool {
	return in.ScaleErr == nil && Check(boundsOf(in)).Action == ComputeMetrics
}

// NeedsPods reports whether the metrics of s need the scale's pods: an
// Autoscaler with only ClusterProportional metrics needs no pods and no
// metrics API.
func (s *Spec) NeedsPods() bool {
	return len(s.HPA.Metrics) > 0 || len(s.Proportional) == 0
}

func boundsOf(in *Input) Bounds {
	return Bounds{
		CurrentReplicas:     in.Scale.SpecReplicas,
		MinReplicas:         MinReplicas(&in.Spec.HPA),
		MaxReplicas:         in.Spec.HPA.MaxReplicas,
		ScaledToZero:        conditionTrue(in.Status, autoscalingv2.ScaledToZero),
		HasObjectOrExternal: hasObjectOrExternal(in.Spec.HPA.Metrics),
	}
}

// Evaluate is one evaluation, pure: observation in, result out — the bounds,
// every metric's proposal, upstream's decision with the proposal extensions,
// the write extensions (pause, dry-run), the conditions, the events, the new
// status and the decision record. It updates in.History.
func Evaluate(in Input) Result {
	if in.ReadAt.IsZero() {
		in.ReadAt = in.Now
	}
	r := Result{in: in, Desired: in.Scale.SpecReplicas, ScaleEvents: in.ScaleEvents, ProportionalStatus: in.ProportionalStatus}
	r.Status = in.Status
	r.Status.Conditions = in.Scratch.conditions(in.Status.Conditions)
	r.Events = append(r.Events, in.Warnings...)
	if in.ScaleErr != nil {
		cause := in.ScaleCause
		if cause == nil {
			cause = in.ScaleErr
		}
		r.warn("FailedGetScale", cause.Error())
		r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", cause)), in.Now)
		r.Err = in.ScaleErr
		r.Outline = outlineRecord(r.recordInput())
		return r
	}
	r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale"), in.Now)
	r.compute()
	if !r.Write {
		r.finish(nil, in.Now)
	}
	return r
}

// Written completes a result whose Write was true with the outcome of the
// scale write (nil: written) at at: the conditions and event upstream sets,
// the scale event the behavior policies count, the status and the record.
func (r *Result) Written(err error, at time.Time) {
	in, d := &r.in, r.Decision
	if err != nil {
		r.warn("FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", r.Desired, d.RescaleReason, err.Error()))
		r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
			fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err)), at)
		r.finish(fmt.Errorf("failed to rescale %s: %w", in.Target, err), at)
		return
	}
	current := in.Scale.SpecReplicas
	r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", r.Desired)), at)
	r.Events = append(r.Events, Event{corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", r.Desired, d.RescaleReason)})
	in.History.Rescaled(in.Spec.HPA.Behavior, current, r.Desired, at)
	r.set(scaledToZeroCondition(current, r.Desired, MinReplicas(&in.Spec.HPA), hasObjectOrExternal(in.Spec.HPA.Metrics)), at)
	r.Scaled = true
	value := behavior.EncodeEvents(in.Spec.HPA.Behavior, in.History.Events, at)
	if value != in.ScaleEvents {
		r.ScaleEvents, r.ScaleEventsChanged = value, true
	}
	r.finish(nil, at)
}

// compute runs the bounds, the proposals, upstream's decision with the
// proposal extensions and the write extensions, and sets the conditions the
// decision decided (in upstream's order, before the scale is written).
func (r *Result) compute() {
	in := &r.in
	h := in.History
	h.Seed(in.Scale.SpecReplicas, in.Now)
	bounds := boundsOf(in)
	gate := Check(bounds)
	// An extension the spec does not set is not entered: each one's file is
	// called only behind its guard, so an evaluation without any runs
	// upstream's steps alone.
	if len(in.Spec.Schedules) > 0 {
		r.Floor = ActiveFloor(in.Spec.Schedules, bounds.MinReplicas, in.Now)
	}
	din := decideInput{
		Bounds: bounds, Gate: &gate,
		Normalize: behavior.Request{
			Behavior:                     in.Spec.HPA.Behavior,
			DownscaleStabilizationWindow: in.Settings.DownscaleStabilization,
			Recommendations:              h.Recommendations,
			Events:                       h.Events,
			Now:                          in.ReadAt,
		},
	}
	switch {
	case gate.Action == ComputeMetrics && in.InputsErr != nil:
		if se, ok := in.InputsErr.(*SelectorError); ok {
			r.warn(se.EventReason, se.Message)
			r.set(condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, se.ConditionReason, se.ConditionMessage), in.Now)
		}
		r.Decision = Decision{Gate: gate, Failed: true, Desired: bounds.CurrentReplicas, Err: in.InputsErr}
		r.ext.State = in.History.Extensions
	case gate.Action == ComputeMetrics:
		var extra []Proposal
		var recs []Metric
		if len(in.Spec.Proportional) > 0 {
			extra, recs = r.proportional()
		}
		din.Proposals = r.propose(extra)
		r.Metrics = append(r.Metrics, recs...)
		if in.Spec.hasProposalExtension() {
			extIn := proposalInputOf(in)
			extIn.Metrics = metricStates(r.Metrics[:len(in.Readings)], extIn.Metrics)
			r.ext = applyProposalExtensions(extIn)
			din.Override = r.ext.Override
		}
		if in.Spec.HasForecast() {
			r.applyForecasts(&din)
		}
		if r.Floor.Replicas > 0 {
			din.Override = withFloor(din.Override, r.Floor, bounds.CurrentReplicas)
		}
		r.Decision = decide(din)
	default:
		r.ext.State = in.History.Extensions
		r.Decision = decide(din)
	}
	h.Keep(r.Decision, r.ext.State)
	d := r.Decision
	hin := holdInput{Spec: in.Spec.Extensions, CurrentReplicas: bounds.CurrentReplicas,
		Desired: d.Desired, Rescale: d.Rescale, Failed: d.Failed}
	if in.Spec.Extensions.Paused || in.Spec.Extensions.DryRun ||
		hasCondition(r.Status, ConditionPaused) || hasCondition(r.Status, ConditionDryRun) {
		r.holds = applyHolds(hin)
	} else {
		r.holds = unheld(hin)
	}
	r.Write, r.Desired = r.holds.Write, r.holds.Desired
	for _, m := range r.Metrics[:min(len(r.Metrics), len(in.Readings))] {
		if p := m.Evaluated.Proposal; p.Err != nil {
			r.warn(p.Condition.Reason, strings.TrimPrefix(p.Condition.Message, failurePrefix))
		}
	}
	if d.ScalingActive != nil {
		r.set(*d.ScalingActive, in.Now)
	}
	if d.Outcome != nil {
		r.set(d.Outcome.AbleToScale, in.Now)
		r.set(d.Outcome.ScalingLimited, in.Now)
	}
	if len(in.Spec.Schedules) > 0 || hasCondition(r.Status, ConditionSchedule) {
		r.scheduleCondition(&r.Floor)
	}
}

// unheld is the write of a decision no extension holds back: a rescale is
// written (extensions.go: applyHolds starts from it).
func unheld(in holdInput) held {
	r := held{Desired: in.Desired, Rescale: in.Rescale && !in.Failed}
	r.Write = r.Rescale
	return r
}

// finish is the last step: the extensions' conditions and events, the
// status, the ClusterProportional status and the record's outline. writeErr
// is the failure to write the scale.
func (r *Result) finish(writeErr error, at time.Time) {
	in, d := &r.in, r.Decision
	for _, c := range append(r.ext.Conditions, r.holds.Conditions...) {
		if c.Status == corev1.ConditionTrue || hasCondition(r.Status, c.Type) {
			r.set(c, at)
		}
	}
	r.FallbackActive = r.ext.FallbackActive
	r.Events = append(r.Events, r.ext.Events...)
	r.Events = append(r.Events, r.holds.Events...)
	current := in.Scale.SpecReplicas
	switch {
	case d.Failed:
		r.setStatus(current, in.Status.DesiredReplicas, false, at)
		r.warn("FailedComputeMetricsReplicas", d.Err.Error())
		r.Err = fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", in.Target, d.Err)
	case writeErr != nil:
		r.setStatus(current, in.Status.DesiredReplicas, false, at)
		r.Err = writeErr
	default:
		r.setStatus(current, r.Desired, r.Scaled, at)
	}
	if len(in.Spec.Proportional) > 0 {
		if !maps.Equal(in.ProportionalStatus, r.propStatus) {
			r.ProportionalStatus, r.ProportionalChanged = r.propStatus, true
		}
	}
	r.Outline = outlineRecord(r.recordInput())
}

// setStatus rebuilds the status as upstream's setStatus: replica counts,
// metric statuses and observed generation replaced, conditions kept, last
// scale time moved on a rescale.
func (r *Result) setStatus(current, desired int32, rescaled bool, at time.Time) {
	generation := r.in.Generation
	st := autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &generation,
		LastScaleTime:      r.Status.LastScaleTime,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		CurrentMetrics:     r.statuses,
		Conditions:         r.Status.Conditions,
	}
	if rescaled {
		now := metav1.NewTime(at)
		st.LastScaleTime = &now
	}
	r.Status = st
}

// Direction names the outcome for the self-metrics: "" when the scale could
// not be read, else "failed", "up", "down" or "none".
func (r *Result) Direction() string {
	switch {
	case r.in.ScaleErr != nil:
		return ""
	case r.Decision.Failed || r.Err != nil:
		return "failed"
	case r.Scaled && r.Desired > r.in.Scale.SpecReplicas:
		return "up"
	case r.Scaled:
		return "down"
	}
	return "none"
}

// set sets a condition in the new status.
func (r *Result) set(c autoscalingv2.HorizontalPodAutoscalerCondition, at time.Time) {
	setCondition(&r.Status, c, metav1.NewTime(at))
}

// warn adds a warning event.
func (r *Result) warn(reason, message string) {
	r.Events = append(r.Events, Event{corev1.EventTypeWarning, reason, message})
}

// MinReplicas is spec.minReplicas, 1 when unset.
func MinReplicas(spec *autoscalingv2.HorizontalPodAutoscalerSpec) int32 {
	if spec.MinReplicas != nil {
		return *spec.MinReplicas
	}
	return 1
}

// Scratch holds the buffers of the proposals for a caller that runs many
// evaluations one after the other (a replay). The zero Scratch is ready; a
// Result made with it is valid until the Scratch's next use.
type Scratch struct {
	conds     []autoscalingv2.HorizontalPodAutoscalerCondition
	metrics   []Metric
	statuses  []autoscalingv2.MetricStatus
	proposals []Proposal
}

// buffers returns zeroed slices of n entries (with room for extra metrics
// and proposals), from s when set.
func (s *Scratch) buffers(n, extra int) ([]Metric, []autoscalingv2.MetricStatus, []Proposal) {
	if s == nil {
		return make([]Metric, n, n+extra), make([]autoscalingv2.MetricStatus, n), make([]Proposal, 0, n+extra)
	}
	if cap(s.metrics) < n+extra {
		s.metrics = make([]Metric, n, n+extra)
	}
	if cap(s.statuses) < n {
		s.statuses = make([]autoscalingv2.MetricStatus, n)
	}
	if cap(s.proposals) < n+extra {
		s.proposals = make([]Proposal, 0, n+extra)
	}
	s.metrics, s.statuses = s.metrics[:n], s.statuses[:n]
	clear(s.metrics)
	clear(s.statuses)
	return s.metrics, s.statuses, s.proposals[:0]
}

// conditions returns a copy of cs the result may change, in s's buffer when
// set (cs may be that buffer: the status of the Scratch's last result).
func (s *Scratch) conditions(cs []autoscalingv2.HorizontalPodAutoscalerCondition) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if s == nil {
		return append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), cs...)
	}
	s.conds = append(s.conds[:0], cs...)
	return s.conds
}
