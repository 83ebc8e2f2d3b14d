package evaluation

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// Stages of the extensions that act on the proposal.
const (
	StageActivation = "Activation"
	StageFallback   = "Fallback"
)

// ConditionFallback reports whether the fallback is active.
const ConditionFallback autoscalingv2.HorizontalPodAutoscalerConditionType = "Fallback"

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

// ExtensionState is what the proposal extensions remember between evaluations of one
// object. The zero ExtensionState is a fresh start.
type ExtensionState struct {
	// BadSince maps a metric's name to when it was first seen failed or
	// stale in the current run of bad evaluations.
	BadSince map[string]time.Time
	// IdleSince is when every metric was first seen idle (zero: not idle).
	IdleSince time.Time
	// FallbackActive is true while the fallback applies.
	FallbackActive bool
}

// metricState is what the proposal extensions know of one metric.
type metricState struct {
	// Name names the metric in conditions and records.
	Name string
	// Failed is true when the metric has no value (read error, no sample).
	Failed bool
	// Value is the metric's raw value in milli-units (an Object metric's
	// value, the sum of an External metric's series), and HasValue whether
	// there is one to compare with Activation.
	Value    int64
	HasValue bool
	// Timestamp is the sample's timestamp (zero when unknown).
	Timestamp time.Time
	// Activation is the threshold in milli-units, when set.
	Activation *int64
}

// proposalInput is what the proposal extensions read.
type proposalInput struct {
	Spec            Extensions
	Now             time.Time
	CurrentReplicas int32
	MinReplicas     int32
	Metrics         []metricState
	State           ExtensionState
}

// proposalResult is what fallback and activation leave: the new state,
// the conditions and the events.
type proposalResult struct {
	State      ExtensionState
	Conditions []autoscalingv2.HorizontalPodAutoscalerCondition
	Events     []Event
	// FallbackActive mirrors State.FallbackActive (for the self-metric).
	FallbackActive bool
}

// fallback is the stage Fallback: it tracks failed and stale metrics and,
// once one has been bad for fallback.after, replaces the proposal by its
// policy's, with its condition and events.
func (r *Result) fallback(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if p.Decided {
		return p, nil
	}
	next := r.proposalInput().fallback(p, &r.ext)
	for _, c := range r.ext.Conditions {
		r.report(c)
	}
	r.Events = append(r.Events, r.ext.Events...)
	if next.Override == p.Override {
		return p, nil
	}
	return p.override(next.Override)
}

// activation is the stage Activation: scale to and from zero (see
// proposalInput.activation). While the fallback applies it decides alone.
func (r *Result) activation(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if p.Decided {
		return p, nil
	}
	next := r.proposalInput().activation(p, &r.ext)
	if next.Override == p.Override {
		return p, nil
	}
	return p.override(next.Override)
}

// proposalInput is the input of fallback and activation, assembled once
// per evaluation.
func (r *Result) proposalInput() *proposalInput {
	if r.extIn == nil {
		in := proposalInputOf(&r.in)
		in.Metrics = metricStates(r.Metrics[:min(len(r.Metrics), len(r.in.Readings))], in.Metrics)
		r.extIn = &in
	}
	return r.extIn
}

// fallback tracks failed and stale metrics in res and, once one has been
// bad for After, returns p replaced by the policy's proposal (Hold: the
// current replicas, not normalized).
func (in *proposalInput) fallback(p proposal, res *proposalResult) proposal {
	f := in.Spec.Fallback
	if f == nil {
		return p
	}
	after := f.After
	if after <= 0 {
		after = DefaultFallbackAfter
	}
	var due []string
	for _, m := range in.Metrics {
		bad, why := badness(m, f.MaxAge, in.Now)
		if !bad {
			continue
		}
		since, ok := in.State.BadSince[m.Name]
		if !ok {
			since = in.Now
		}
		if res.State.BadSince == nil {
			res.State.BadSince = map[string]time.Time{}
		}
		res.State.BadSince[m.Name] = since
		if !in.Now.Before(since.Add(after)) {
			due = append(due, fmt.Sprintf("%s %s for %s", m.Name, why, in.Now.Sub(since).Round(time.Second)))
		}
	}
	was := in.State.FallbackActive
	res.State.FallbackActive = len(due) > 0
	res.FallbackActive = res.State.FallbackActive
	if len(due) == 0 {
		res.Conditions = append(res.Conditions, condition(ConditionFallback, corev1.ConditionFalse, "MetricsAvailable", "every metric is available and fresh"))
		if was {
			res.Events = append(res.Events, Event{Type: corev1.EventTypeNormal, Reason: "FallbackCleared",
				Message: "every metric is available and fresh again; the normal algorithm applies"})
		}
		return p
	}
	msg := fmt.Sprintf("fallback %s: %s", policyText(f), strings.Join(due, "; "))
	res.Conditions = append(res.Conditions, condition(ConditionFallback, corev1.ConditionTrue, "Fallback"+string(f.Policy), msg))
	if !was {
		res.Events = append(res.Events, Event{Type: corev1.EventTypeWarning, Reason: "FallbackActivated", Message: msg})
	}
	o := &Override{Stage: StageFallback, Message: msg}
	switch f.Policy {
	case FallbackReplicas:
		o.Replicas = f.Replicas
	case FallbackAtLeast:
		o.Replicas = max(in.CurrentReplicas, f.Replicas)
	default:
		o.Hold, o.Replicas = true, in.CurrentReplicas
	}
	next, _ := p.override(o)
	return next
}

func policyText(f *Fallback) string {
	switch f.Policy {
	case FallbackReplicas:
		return fmt.Sprintf("to %d replicas", f.Replicas)
	case FallbackAtLeast:
		return fmt.Sprintf("to at least %d replicas", f.Replicas)
	}
	return "holds the current replicas"
}

// badness says whether a metric is failed or stale (its sample older than
// maxAge at now).
func badness(m metricState, maxAge time.Duration, now time.Time) (bool, string) {
	if m.Failed {
		return true, "failed"
	}
	if maxAge > 0 && !m.Timestamp.IsZero() && now.Sub(m.Timestamp) > maxAge {
		return true, fmt.Sprintf("stale (sample %s old)", now.Sub(m.Timestamp).Round(time.Second))
	}
	return false, ""
}

// activation applies the activation thresholds when scaling to zero is on
// (minReplicas 0 and some metric has an activation), tracking in res since
// when every metric is idle: at zero replicas it wakes the target (at least
// 1) as soon as a metric exceeds its activation and otherwise keeps it at
// zero; above zero it never proposes zero until every metric has been idle
// (at or below its activation, 0 by default) for ScaleToZero.After, and
// then proposes zero, which the scale-down behavior paces. A proposal a
// fallback replaced is returned as is.
func (in *proposalInput) activation(p proposal, res *proposalResult) proposal {
	if in.MinReplicas != 0 || !hasActivation(in.Metrics) {
		return p
	}
	after := DefaultScaleToZeroAfter
	if in.Spec.ScaleToZero != nil && in.Spec.ScaleToZero.After > 0 {
		after = in.Spec.ScaleToZero.After
	}
	var active []string
	idle := true
	for _, m := range in.Metrics {
		threshold := int64(0)
		if m.Activation != nil {
			threshold = *m.Activation
		}
		switch {
		case !m.HasValue:
			idle = false
		case m.Value > threshold:
			active = append(active, fmt.Sprintf("%s %s > activation %s", m.Name, milliText(m.Value), milliText(threshold)))
			idle = false
		}
	}
	if idle {
		res.State.IdleSince = in.State.IdleSince
		if res.State.IdleSince.IsZero() {
			res.State.IdleSince = in.Now
		}
	}
	current := in.CurrentReplicas
	idleFor := in.Now.Sub(res.State.IdleSince)
	if p.Override != nil || current > 0 && !p.Usable {
		// A fallback decides alone; a failed metric blocks a scale-down
		// (upstream's rule, until the fallback applies): no floor or zero
		// to propose.
		return p
	}
	var o *Override
	switch {
	case current == 0 && len(active) > 0:
		o = &Override{Stage: StageActivation, Replicas: max(p.Replicas, 1),
			Message: "activated: " + strings.Join(active, ", ")}
	case current == 0:
		o = &Override{Stage: StageActivation, Replicas: 0,
			Message: "every metric is at or below its activation: staying at zero"}
	case idle && idleFor >= after:
		o = &Override{Stage: StageActivation, Replicas: 0,
			Message: fmt.Sprintf("every metric at or below its activation for %s (scaleToZero.after %s): scaling to zero", idleFor.Round(time.Second), after)}
	case idle:
		o = &Override{Stage: StageActivation, Replicas: max(p.Replicas, 1),
			Message: fmt.Sprintf("every metric at or below its activation for %s of %s: at least 1 replica", idleFor.Round(time.Second), after)}
	case p.Replicas < 1:
		o = &Override{Stage: StageActivation, Replicas: 1,
			Message: "a metric is above its activation: at least 1 replica"}
	default:
		return p
	}
	next, _ := p.override(o)
	return next
}

func hasActivation(ms []metricState) bool {
	for _, m := range ms {
		if m.Activation != nil {
			return true
		}
	}
	return false
}

// milliText prints a milli-value as a decimal.
func milliText(v int64) string {
	if v%1000 == 0 {
		return fmt.Sprintf("%d", v/1000)
	}
	return fmt.Sprintf("%.3f", float64(v)/1000)
}

// proposalInputOf assembles the input of the proposal extensions; the metric
// states carry only the activations until the metrics are evaluated.
func proposalInputOf(in *Input) proposalInput {
	p := proposalInput{
		Spec: in.Spec.Extensions, Now: in.ReadAt, CurrentReplicas: in.Scale.SpecReplicas,
		MinReplicas: MinReplicas(&in.Spec.HPA), State: in.Memory.Extensions,
	}
	for i, o := range in.Spec.MetricOptions {
		if o.Activation == nil {
			continue
		}
		if p.Metrics == nil {
			p.Metrics = make([]metricState, len(in.Spec.MetricOptions))
		}
		v := o.Activation.MilliValue()
		p.Metrics[i].Activation = &v
	}
	return p
}

// metricStates describes the evaluated metrics to the proposal extensions;
// opts carries each metric's activation (same order).
func metricStates(metrics []Metric, opts []metricState) []metricState {
	out := make([]metricState, len(metrics))
	for i, mt := range metrics {
		r, e := mt.Reading, mt.Evaluated
		m := metricState{Name: MetricName(r.Spec), Timestamp: r.Timestamp}
		if i < len(opts) {
			m.Activation = opts[i].Activation
		}
		switch {
		case e.Proposal.Err != nil:
			m.Failed = true
		case r.Spec.Type == autoscalingv2.ObjectMetricSourceType:
			m.Value, m.HasValue = r.Value, true
		case r.Spec.Type == autoscalingv2.ExternalMetricSourceType:
			for _, v := range r.Values {
				m.Value += v
			}
			m.HasValue = true
		default:
			m.Value, m.HasValue = e.Result.Value, true
		}
		out[i] = m
	}
	return out
}
