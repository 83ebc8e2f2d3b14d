package pipeline

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// Request is one evaluation's input to the decide stage.
type Request struct {
	Spec Spec
	// Bounds and Gate are the bounds check of the observation (the gate
	// said whether metrics were read).
	Bounds decision.Bounds
	Gate   decision.Gate
	// InputsErr is set when the pods could not be determined; no metric was
	// read then and the evaluation fails.
	InputsErr error
	// Readings has one entry per HPA metric when the gate said to read them.
	Readings []decision.Reading
	Shared   decision.Shared
	// Extra are proposals computed apart from the readings (the
	// ClusterProportional metrics), placed after the readings' proposals.
	Extra []decision.Proposal
	// DownscaleStabilization is the default downscale stabilization window
	// (used without behavior).
	DownscaleStabilization time.Duration
	// Now is when the metrics were read (upstream reads the clock again
	// before normalizing).
	Now time.Time
	// Scratch, when set, lends its buffers to the result (see Scratch).
	Scratch *Scratch
}

// Scratch holds the buffers of the decide stage for a caller that runs many
// evaluations one after the other (a replay). The zero Scratch is ready; a
// Decided made with it is valid until the Scratch's next use.
type Scratch struct {
	evaluated []decision.Evaluated
	statuses  []autoscalingv2.MetricStatus
	proposals []decision.Proposal
}

// buffers returns zeroed slices of n entries (and room for extra proposals),
// from s when set.
func (s *Scratch) buffers(n, extra int) ([]decision.Evaluated, []autoscalingv2.MetricStatus, []decision.Proposal) {
	if s == nil {
		return make([]decision.Evaluated, n), make([]autoscalingv2.MetricStatus, n), make([]decision.Proposal, 0, n+extra)
	}
	if cap(s.evaluated) < n {
		s.evaluated, s.statuses = make([]decision.Evaluated, n), make([]autoscalingv2.MetricStatus, n)
	}
	if cap(s.proposals) < n+extra {
		s.proposals = make([]decision.Proposal, 0, n+extra)
	}
	s.evaluated, s.statuses = s.evaluated[:n], s.statuses[:n]
	clear(s.evaluated)
	clear(s.statuses)
	return s.evaluated, s.statuses, s.proposals[:0]
}

// Decided is the result of the decide stage.
type Decided struct {
	// Evaluated has one entry per reading (empty when none was read).
	Evaluated []decision.Evaluated
	// Statuses are the status.currentMetrics entries of the readings.
	Statuses []autoscalingv2.MetricStatus
	D        decision.Decision
	// Ext is the result of the proposal extensions (fallback, activation).
	Ext adjust.ProposalResult
}

// Decide is upstream's decision over an observation — one proposal per
// metric, then decision.Decide — with the proposal extensions of package
// adjust given the chance to override the combined proposal. h is read, not
// changed (see History.Keep).
func Decide(r Request, h *History) Decided {
	var out Decided
	ext := proposalInput(r, h)
	in := decisionInput(r, h)
	if r.InputsErr != nil {
		out.D = decision.Decision{Gate: r.Gate, Failed: true, Desired: r.Bounds.CurrentReplicas, Err: r.InputsErr}
		out.Ext.State = ext.State
		return out
	}
	if r.Gate.Action != decision.ComputeMetrics {
		out.Ext.State = ext.State
		out.D = decision.Decide(in)
		return out
	}
	out.Evaluated, out.Statuses, in.Proposals = r.Scratch.buffers(len(r.Readings), len(r.Extra))
	for i, rd := range r.Readings {
		out.Evaluated[i] = decision.Propose(rd, r.Shared)
		out.Statuses[i] = out.Evaluated[i].Status
		in.Proposals = append(in.Proposals, out.Evaluated[i].Proposal)
	}
	in.Proposals = append(in.Proposals, r.Extra...)
	if ext.Wanted() {
		ext.Metrics = MetricStates(r.Readings, out.Evaluated, ext.Metrics)
		out.Ext = adjust.Proposal(ext)
		in.Override = out.Ext.Override
	}
	out.D = decision.Decide(in)
	return out
}

// Evaluate is the pure part of one evaluation: it seeds h at start (the
// evaluation's start), decides, keeps the decision's history in h and applies
// the write-stage extensions (pause, dry-run). The caller writes the scale
// when the result says so, and then calls h.Rescaled.
func Evaluate(r Request, h *History, start time.Time) (Decided, adjust.Result) {
	h.Seed(r.Bounds.CurrentReplicas, start)
	dec := Decide(r, h)
	h.Keep(dec)
	adj := adjust.Apply(adjust.Input{
		Spec: r.Spec.Extensions, CurrentReplicas: r.Bounds.CurrentReplicas,
		Desired: dec.D.Desired, Rescale: dec.D.Rescale, Failed: dec.D.Failed,
	})
	return dec, adj
}

// decisionInput assembles what decision.Decide reads, except the proposals.
func decisionInput(r Request, h *History) decision.Input {
	gate := r.Gate
	return decision.Input{
		Bounds: r.Bounds,
		Gate:   &gate,
		Normalize: behavior.Request{
			Behavior:                     r.Spec.HPA.Behavior,
			DownscaleStabilizationWindow: r.DownscaleStabilization,
			Recommendations:              h.Recommendations,
			Events:                       h.Events,
			Now:                          r.Now,
		},
	}
}

// proposalInput assembles the input of the proposal extensions; the metric
// states carry only the activations until Decide fills them.
func proposalInput(r Request, h *History) adjust.ProposalInput {
	in := adjust.ProposalInput{
		Spec: r.Spec.Extensions, Now: r.Now, CurrentReplicas: r.Bounds.CurrentReplicas,
		MinReplicas: MinReplicas(&r.Spec.HPA), State: h.Extensions,
	}
	for i, o := range r.Spec.MetricOptions {
		if o.Activation == nil {
			continue
		}
		if in.Metrics == nil {
			in.Metrics = make([]adjust.MetricState, len(r.Spec.MetricOptions))
		}
		v := o.Activation.MilliValue()
		in.Metrics[i].Activation = &v
	}
	return in
}

// MetricStates describes the evaluated metrics to the proposal extensions;
// opts carries each metric's activation (same order).
func MetricStates(readings []decision.Reading, evaluated []decision.Evaluated, opts []adjust.MetricState) []adjust.MetricState {
	out := make([]adjust.MetricState, len(readings))
	for i, r := range readings {
		m := adjust.MetricState{Name: record.MetricName(r.Spec), Timestamp: r.Timestamp}
		if i < len(opts) {
			m.Activation = opts[i].Activation
		}
		e := evaluated[i]
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
