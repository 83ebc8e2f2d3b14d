package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// sync evaluates the object behind key once. deleted is true when the object
// is gone (its state is then dropped) or the key is invalid.
func (c *Controller) sync(ctx context.Context, key string) (deleted bool, err error) {
	kind, namespace, name, err := splitKey(key)
	if err != nil {
		return true, err
	}
	b, ok := c.backends[kind]
	if !ok {
		return true, fmt.Errorf("no backend for kind %q", kind)
	}
	logger := klog.FromContext(ctx).WithValues("kind", kind, "autoscaler", klog.KRef(namespace, name))
	ctx = klog.NewContext(ctx, logger)
	obj, err := b.Get(namespace, name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		logger.V(2).Info("Autoscaler has been deleted, dropped its state")
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if err := c.writes.ensureSeen(key, obj.ResourceVersion); err != nil {
		return false, err
	}
	c.tracker.register(key)
	start := c.deps.Clock.Now()
	err = c.evaluate(ctx, key, b, obj)
	c.deps.SelfMetrics.observeReconcile(kind, c.deps.Clock.Since(start), err)
	return false, err
}

// forget drops everything the controller remembers about key.
func (c *Controller) forget(key string) {
	c.state.delete(key)
	c.writes.forget(key)
	c.tracker.remove(key)
	c.due.forget(key)
	c.deps.SelfMetrics.forget(key)
	c.cluster.forget(key)
}

// evaluation is the state of one evaluation of one object: the object (its
// status is rebuilt in place and written once, by record), the conditions
// and events gathered on the way, and the object's history.
type evaluation struct {
	c        *Controller
	b        Backend
	key      string
	obj      *Object
	original *autoscalingv2.HorizontalPodAutoscalerStatus
	// target names the scale target as upstream's messages do: Kind/ns/name.
	target string
	hist   *history
	now    time.Time
	// selector is the scale's pod selector, once parsed.
	selector labels.Selector
	// events are recorded by record, in order.
	events []event
	// proportionalChanged is true when the ClusterProportional entries of
	// status.currentMetrics changed (they are not in obj.Status).
	proportionalChanged bool
}

type event struct{ eventType, reason, message string }

// evaluate is one evaluation, a pipeline read top to bottom:
//
//	observe → decide → adjust → act → record
//
// observe reads the scale, pods and metrics; decide is upstream's algorithm
// (pure); adjust applies the extensions (pure); act writes /scale when the
// adjusted decision says so; record writes status, conditions, events and the
// decision record, once. Only observe and act read or write the target and
// the metrics; only record writes the autoscaler.
func (c *Controller) evaluate(ctx context.Context, key string, b Backend, obj *Object) error {
	ref := obj.Spec.ScaleTargetRef
	ev := &evaluation{
		c: c, b: b, key: key, obj: obj,
		original: obj.Status.DeepCopy(),
		target:   fmt.Sprintf("%s/%s/%s", ref.Kind, obj.Namespace, ref.Name),
		now:      c.deps.Clock.Now(),
	}
	var fresh bool
	ev.hist, fresh = c.state.get(key)
	for _, w := range obj.Warnings {
		ev.warn("InvalidAnnotation", w)
	}
	if fresh {
		ev.restoreScaleEvents()
	}
	obs := ev.observe(ctx)
	if obs.scaleErr != nil {
		return ev.record(ctx, outcome{obs: obs, err: obs.scaleErr})
	}
	ev.hist.recommendations = behavior.SeedRecommendations(ev.hist.recommendations, obs.current, ev.now)
	dec := decide(obs, ev.decisionInput(obs), ev.proposalExtensions(obs))
	ev.hist.extensions = dec.ext.State
	ev.queueMetricFailures(dec)
	ev.applyDecision(dec.d)
	adj := adjust.Apply(adjust.Input{
		Spec: obj.Extensions, CurrentReplicas: obs.current,
		Desired: dec.d.Desired, Rescale: dec.d.Rescale, Failed: dec.d.Failed,
	})
	out := outcome{obs: obs, dec: dec, adj: adj}
	if adj.Write {
		out.scaled, out.err = ev.act(ctx, obs, dec.d, adj)
	}
	return ev.record(ctx, out)
}

// decided is the result of the decide stage.
type decided struct {
	// evaluated has one entry per reading (empty when none was read).
	evaluated []decision.Evaluated
	statuses  []autoscalingv2.MetricStatus
	d         decision.Decision
	// ext is the result of the proposal extensions (fallback, activation).
	ext adjust.ProposalResult
	// proportional describes the ClusterProportional metrics for the record;
	// proportionalStatus is their status.currentMetrics entries by index.
	proportional       []record.Metric
	proportionalStatus map[int]v1alpha1.ClusterProportionalStatus
}

// proposalInput is what decide passes to the proposal extensions, less the
// metric states it computes.
type proposalInput = adjust.ProposalInput

// decide is upstream's decision over an observation — one proposal per
// metric, then decision.Decide — with the proposal extensions of package
// adjust given the chance to override the combined proposal. It is pure.
func decide(obs observation, in decision.Input, ext proposalInput) decided {
	var out decided
	if obs.inputsErr != nil {
		out.d = decision.Decision{Gate: obs.gate, Failed: true, Desired: obs.current, Err: obs.inputsErr}
		out.ext.State = ext.State
		return out
	}
	if obs.gate.Action == decision.ComputeMetrics {
		out.evaluated = make([]decision.Evaluated, len(obs.readings))
		out.statuses = make([]autoscalingv2.MetricStatus, len(obs.readings))
		in.Proposals = make([]decision.Proposal, len(obs.readings))
		for i, r := range obs.readings {
			out.evaluated[i] = decision.Propose(r, obs.shared)
			out.statuses[i], in.Proposals[i] = out.evaluated[i].Status, out.evaluated[i].Proposal
		}
		props, recs, statuses := proposeProportional(obs.proportional, obs.decideAt)
		in.Proposals = append(in.Proposals, props...)
		out.proportional, out.proportionalStatus = recs, statuses
		if ext.Wanted() {
			ext.Metrics = metricStates(obs.readings, out.evaluated, ext.Metrics)
			out.ext = adjust.Proposal(ext)
			in.Override = out.ext.Override
		}
	} else {
		out.ext.State = ext.State
	}
	out.d = decision.Decide(in)
	return out
}

// metricStates describes the evaluated metrics to the proposal extensions;
// opts carries each metric's activation (same order).
func metricStates(readings []decision.Reading, evaluated []decision.Evaluated, opts []adjust.MetricState) []adjust.MetricState {
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

// proposalExtensions assembles the input of the proposal extensions; the
// metric states carry only the activations until decide fills them.
func (ev *evaluation) proposalExtensions(obs observation) proposalInput {
	in := proposalInput{
		Spec: ev.obj.Extensions, Now: obs.decideAt, CurrentReplicas: obs.current,
		MinReplicas: ev.minReplicas(), State: ev.hist.extensions,
	}
	for i, o := range ev.obj.MetricOptions {
		if o.Activation == nil {
			continue
		}
		if in.Metrics == nil {
			in.Metrics = make([]adjust.MetricState, len(ev.obj.MetricOptions))
		}
		v := o.Activation.MilliValue()
		in.Metrics[i].Activation = &v
	}
	return in
}

// applyDecision keeps the decision's recommendation history and sets the
// conditions it decided, in upstream's order (before the scale is written).
func (ev *evaluation) applyDecision(d decision.Decision) {
	if d.ScalingActive != nil {
		ev.set(*d.ScalingActive)
	}
	if d.Outcome != nil {
		ev.hist.recommendations = d.Outcome.Recommendations
		ev.set(d.Outcome.AbleToScale)
		ev.set(d.Outcome.ScalingLimited)
	}
}

// queueMetricFailures queues upstream's warning event for each failed metric.
func (ev *evaluation) queueMetricFailures(dec decided) {
	for _, e := range dec.evaluated {
		if p := e.Proposal; p.Err != nil {
			ev.warn(p.Condition.Reason, strings.TrimPrefix(p.Condition.Message, failurePrefix))
		}
	}
}

// failurePrefix starts every ScalingActive=False message of a failed metric;
// the rest is what upstream's per-metric warning event says.
const failurePrefix = "the HPA was unable to compute the replica count: "

// decisionInput assembles what decision.Decide reads, except the proposals.
func (ev *evaluation) decisionInput(obs observation) decision.Input {
	gate := obs.gate
	return decision.Input{
		Bounds: obs.bounds,
		Gate:   &gate,
		Normalize: behavior.Request{
			Behavior:                     ev.obj.Spec.Behavior,
			DownscaleStabilizationWindow: ev.c.cfg.DownscaleStabilization,
			Recommendations:              ev.hist.recommendations,
			Events:                       ev.hist.events,
			Now:                          obs.decideAt,
		},
	}
}

func (ev *evaluation) minReplicas() int32 {
	if ev.obj.Spec.MinReplicas != nil {
		return *ev.obj.Spec.MinReplicas
	}
	return 1
}

// set sets a condition in the object's status (written by record).
func (ev *evaluation) set(c autoscalingv2.HorizontalPodAutoscalerCondition) {
	setCondition(&ev.obj.Status, c, metav1.NewTime(ev.c.deps.Clock.Now()))
}

// warn queues a warning event (recorded by record).
func (ev *evaluation) warn(reason, message string) {
	ev.events = append(ev.events, event{corev1.EventTypeWarning, reason, message})
}

// normal queues a normal event (recorded by record).
func (ev *evaluation) normal(reason, message string) {
	ev.events = append(ev.events, event{corev1.EventTypeNormal, reason, message})
}
