package evaluation

import (
	"fmt"
	"maps"
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

// Result is the outcome of one evaluation: what it decided, wrote and
// reports.
type Result struct {
	// Metrics has every metric's reading and proposal: the HPA metrics in
	// spec order, then the ClusterProportional ones (empty when none was
	// read).
	Metrics []Metric
	// Decision is upstream's decision with the extensions' proposals.
	Decision Decision
	// Write is true when the decision was to write Desired to the scale (a
	// rescale no stage held back); Scaled when the write succeeded.
	Write   bool
	Desired int32
	Scaled  bool
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
	// Outline is the decision record without its metrics, sharing the
	// result's steps (Signature reads it); Record builds the whole one.
	Outline v1alpha1.DecisionRecord
	// Err is the evaluation's failure (scale read, metrics, scale write), if
	// any. Decision.Err may still report failed metrics of a decision that
	// stands (upstream reports it after acting).
	Err error
	// FallbackActive is true while the fallback applies.
	FallbackActive bool
	// Floor is the schedules' floor at Now (schedule.go).
	Floor Floor

	in Input
	// write is Evaluate's; writeErr and writtenAt its outcome.
	write     WriteScale
	writeErr  error
	writtenAt time.Time
	// bounds and request are what upstream's stages read (decide.go);
	// proposals the metrics' proposals.
	bounds    Bounds
	request   behavior.Request
	proposals []Proposal
	statuses  []autoscalingv2.MetricStatus
	// steps are the record's steps, in the order the stages added them;
	// held why a decided write was held back.
	steps      []v1alpha1.DecisionStep
	held       string
	propStatus map[int]v1alpha1.ClusterProportionalStatus
	// ext and extIn are fallback's and activation's (fallback_activation.go).
	ext   proposalResult
	extIn *proposalInput
	// forecastOutcomes are the metrics' forecasts (forecast.go).
	forecastOutcomes []forecastOutcome
}

// WriteScale writes desired to the target's /scale (reason is the rescale's,
// for a log) and returns when the write completed, or why it failed: the
// controller writes the scale subresource, a replay its simulated
// workload. Evaluate calls it at most once, in its last stage, only for a
// rescale no stage held back.
type WriteScale func(desired int32, reason string) (at time.Time, err error)

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

// Evaluate is one evaluation: observation in, result out. It runs the
// stages (stages.go) in their declared order — the bounds, every metric's
// proposal and their maximum, the extensions that change the proposal, the
// behavior, the holds on the write, the write through write — then sets
// the status and the decision record; a scale that could not be read
// (Input.ScaleErr) is reported and no stage runs. It updates in.Memory.
// Evaluate does no I/O of its own: write is the only call out, and a nil
// write decides without writing (Write reports the decision; Scaled stays
// false).
func Evaluate(in Input, write WriteScale) Result {
	if in.ReadAt.IsZero() {
		in.ReadAt = in.Now
	}
	r := Result{in: in, write: write, Desired: in.Scale.SpecReplicas, ScaleEvents: in.ScaleEvents, ProportionalStatus: in.ProportionalStatus}
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
		r.Outline = r.outline()
		return r
	}
	r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale"), in.Now)
	h := in.Memory
	h.Seed(in.Scale.SpecReplicas, in.Now)
	r.bounds = boundsOf(&r.in)
	r.request = behavior.Request{
		Behavior:                     in.Spec.HPA.Behavior,
		DownscaleStabilizationWindow: in.Settings.DownscaleStabilization,
		Recommendations:              h.Recommendations,
		Events:                       h.Events,
		Now:                          in.ReadAt,
	}
	r.run()
	r.finish()
	return r
}

// writeScale is the stage Write: the decided count written through
// Evaluate's write, then what upstream sets after it — the conditions and
// event of the write, the scale event the behavior policies count.
func (r *Result) writeScale(p proposal) (proposal, []v1alpha1.DecisionStep) {
	r.Write, r.Desired, r.held = p.Write, r.Decision.Desired, p.Held
	if !p.Write || r.write == nil {
		return p, nil
	}
	in, d := &r.in, r.Decision
	at, err := r.write(r.Desired, d.RescaleReason)
	r.writtenAt = at
	if err != nil {
		r.warn("FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", r.Desired, d.RescaleReason, err.Error()))
		r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
			fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err)), at)
		r.writeErr = fmt.Errorf("failed to rescale %s: %w", in.Target, err)
		return p, nil
	}
	current := in.Scale.SpecReplicas
	r.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", r.Desired)), at)
	r.Events = append(r.Events, Event{corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", r.Desired, d.RescaleReason)})
	in.Memory.Rescaled(in.Spec.HPA.Behavior, current, r.Desired, at)
	r.set(scaledToZeroCondition(current, r.Desired, MinReplicas(&in.Spec.HPA), hasObjectOrExternal(in.Spec.HPA.Metrics)), at)
	r.Scaled = true
	value := behavior.EncodeEvents(in.Spec.HPA.Behavior, in.Memory.Events, at)
	if value != in.ScaleEvents {
		r.ScaleEvents, r.ScaleEventsChanged = value, true
	}
	return p, nil
}

// finish follows the stages: what the evaluation leaves in the Memory, the
// status (as of the write, when there was one), the ClusterProportional
// status and the record's outline.
func (r *Result) finish() {
	in, d := &r.in, r.Decision
	state := in.Memory.Extensions
	if d.Aggregate != nil {
		// The proposal stages ran: what fallback and activation track now
		// (nothing when the spec sets neither).
		state = r.ext.State
	}
	in.Memory.Keep(d, state)
	r.FallbackActive = r.ext.FallbackActive
	at := in.Now
	if !r.writtenAt.IsZero() {
		at = r.writtenAt
	}
	current := in.Scale.SpecReplicas
	switch {
	case d.Failed:
		r.setStatus(current, in.Status.DesiredReplicas, false, at)
		r.warn("FailedComputeMetricsReplicas", d.Err.Error())
		r.Err = fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", in.Target, d.Err)
	case r.writeErr != nil:
		r.setStatus(current, in.Status.DesiredReplicas, false, at)
		r.Err = r.writeErr
	default:
		r.setStatus(current, r.Desired, r.Scaled, at)
	}
	if len(in.Spec.Proportional) > 0 {
		if !maps.Equal(in.ProportionalStatus, r.propStatus) {
			r.ProportionalStatus, r.ProportionalChanged = r.propStatus, true
		}
	}
	r.Outline = r.outline()
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

// report sets an extension's condition: one that is True, or one the
// status holds already (a False one is not added).
func (r *Result) report(c autoscalingv2.HorizontalPodAutoscalerCondition) {
	if c.Status == corev1.ConditionTrue || hasCondition(r.Status, c.Type) {
		r.set(c, r.in.Now)
	}
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
