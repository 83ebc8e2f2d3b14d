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
	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/pipeline"
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
	dec, adj := ev.decide(obs)
	ev.queueMetricFailures(dec)
	ev.applyDecision(dec.D)
	out := outcome{obs: obs, dec: dec, adj: adj}
	if adj.Write {
		out.scaled, out.err = ev.act(ctx, obs, dec.D, adj)
	}
	return ev.record(ctx, out)
}

// decided is the result of the decide stage: the pure decision
// (pipeline.Decided) and the ClusterProportional metrics' part.
type decided struct {
	pipeline.Decided
	// proportional describes the ClusterProportional metrics for the record;
	// proportionalStatus is their status.currentMetrics entries by index.
	proportional       []record.Metric
	proportionalStatus map[int]v1alpha1.ClusterProportionalStatus
}

// decide runs pipeline.Evaluate over an observation, with the
// ClusterProportional metrics' proposals after the metrics'. It keeps the
// decision's history in ev.hist and returns the adjusted outcome.
func (ev *evaluation) decide(obs observation) (decided, adjust.Result) {
	var out decided
	r := pipeline.Request{
		Spec:   pipeline.Spec{HPA: ev.obj.Spec, Extensions: ev.obj.Extensions, MetricOptions: ev.obj.MetricOptions},
		Bounds: obs.bounds, Gate: obs.gate, InputsErr: obs.inputsErr,
		Readings: obs.readings, Shared: obs.shared,
		DownscaleStabilization: ev.c.cfg.DownscaleStabilization,
		Now:                    obs.decideAt,
	}
	if obs.inputsErr == nil && obs.gate.Action == decision.ComputeMetrics {
		r.Extra, out.proportional, out.proportionalStatus = proposeProportional(obs.proportional, obs.decideAt)
	}
	var adj adjust.Result
	out.Decided, adj = pipeline.Evaluate(r, &ev.hist.History, ev.now)
	return out, adj
}

// applyDecision sets the conditions the decision decided, in upstream's
// order (before the scale is written).
func (ev *evaluation) applyDecision(d decision.Decision) {
	if d.ScalingActive != nil {
		ev.set(*d.ScalingActive)
	}
	if d.Outcome != nil {
		ev.set(d.Outcome.AbleToScale)
		ev.set(d.Outcome.ScalingLimited)
	}
}

// queueMetricFailures queues upstream's warning event for each failed metric.
func (ev *evaluation) queueMetricFailures(dec decided) {
	for _, e := range dec.Evaluated {
		if p := e.Proposal; p.Err != nil {
			ev.warn(p.Condition.Reason, strings.TrimPrefix(p.Condition.Message, failurePrefix))
		}
	}
}

// failurePrefix starts every ScalingActive=False message of a failed metric;
// the rest is what upstream's per-metric warning event says.
const failurePrefix = "the HPA was unable to compute the replica count: "

func (ev *evaluation) minReplicas() int32 { return pipeline.MinReplicas(&ev.obj.Spec) }

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
