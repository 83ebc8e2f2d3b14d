package controller

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
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
	err = c.reconcile(ctx, key, b, obj)
	c.deps.SelfMetrics.observeReconcile(kind, c.deps.Clock.Since(start), err)
	return false, err
}

// forget drops everything the controller remembers about key.
func (c *Controller) forget(key string) {
	c.state.delete(key)
	c.writes.forget(key)
	c.tracker.remove(key)
	c.due.forget(key)
}

// pass is one reconcile of one object.
type pass struct {
	c        *Controller
	b        Backend
	key      string
	obj      *Object
	original *autoscalingv2.HorizontalPodAutoscalerStatus
	// target names the scale target as upstream's messages do: Kind/ns/name.
	target string
	hist   *history
	now    time.Time
}

// reconcile is upstream's reconcileAutoscaler: read the scale, decide, then
// write the scale, the status and events.
func (c *Controller) reconcile(ctx context.Context, key string, b Backend, obj *Object) error {
	ref := obj.Spec.ScaleTargetRef
	p := &pass{
		c: c, b: b, key: key, obj: obj,
		original: obj.Status.DeepCopy(),
		target:   fmt.Sprintf("%s/%s/%s", ref.Kind, obj.Namespace, ref.Name),
		hist:     c.state.get(key),
		now:      c.deps.Clock.Now(),
	}
	sc, err := c.getScale(ctx, obj)
	if err != nil {
		return p.failGetScale(ctx, err)
	}
	p.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale"))
	current := sc.scale.Spec.Replicas
	p.hist.recommendations = behavior.SeedRecommendations(p.hist.recommendations, current, p.now)
	in := p.decisionInput(current)
	var statuses []autoscalingv2.MetricStatus
	if decision.Check(in.Bounds).Action == decision.ComputeMetrics {
		mi, err := p.metricInputs(sc.scale)
		if err != nil {
			p.c.deps.SelfMetrics.decision("failed")
			return p.failMetrics(ctx, current, nil, err)
		}
		in.Proposals, statuses = p.proposals(ctx, mi)
	}
	// Upstream reads the clock again when it normalizes, after the metrics.
	in.Normalize.Now = c.deps.Clock.Now()
	return p.apply(ctx, sc, decision.Decide(in), statuses)
}

func (p *pass) minReplicas() int32 {
	if p.obj.Spec.MinReplicas != nil {
		return *p.obj.Spec.MinReplicas
	}
	return 1
}

// decisionInput assembles what decision.Decide reads, except the proposals.
func (p *pass) decisionInput(current int32) decision.Input {
	spec := p.obj.Spec
	return decision.Input{
		Bounds: decision.Bounds{
			CurrentReplicas:     current,
			MinReplicas:         p.minReplicas(),
			MaxReplicas:         spec.MaxReplicas,
			ScaledToZero:        conditionTrue(p.obj.Status, autoscalingv2.ScaledToZero),
			HasObjectOrExternal: decision.HasObjectOrExternal(spec.Metrics),
		},
		Normalize: behavior.Request{
			Behavior:                     spec.Behavior,
			DownscaleStabilizationWindow: p.c.cfg.DownscaleStabilization,
			Recommendations:              p.hist.recommendations,
			Events:                       p.hist.events,
		},
	}
}

// apply carries out a decision.
func (p *pass) apply(ctx context.Context, sc *targetScale, d decision.Decision, statuses []autoscalingv2.MetricStatus) error {
	logger := klog.FromContext(ctx)
	current := sc.scale.Spec.Replicas
	if d.ScalingActive != nil {
		p.set(*d.ScalingActive)
	}
	if d.Failed {
		p.c.deps.SelfMetrics.decision("failed")
		return p.failMetrics(ctx, current, statuses, d.Err)
	}
	if d.Outcome != nil {
		p.hist.recommendations = d.Outcome.Recommendations
		p.set(d.Outcome.AbleToScale)
		p.set(d.Outcome.ScalingLimited)
		logger.V(4).Info("Proposing desired replicas", "desiredReplicas", d.Aggregate.Replicas,
			"metric", d.Aggregate.Metric, "timestamp", d.Aggregate.Timestamp, "scaleTarget", p.target)
	}
	direction := "none"
	if d.Rescale {
		if err := p.rescale(ctx, sc, d, statuses); err != nil {
			p.c.deps.SelfMetrics.decision("failed")
			return err
		}
		direction = "down"
		if d.Desired > current {
			direction = "up"
		}
	} else {
		logger.V(4).Info("Decided not to scale", "scaleTarget", p.target, "desiredReplicas", d.Desired, "lastScaleTime", p.obj.Status.LastScaleTime)
	}
	p.c.deps.SelfMetrics.decision(direction)
	p.setStatus(current, d.Desired, statuses, d.Rescale)
	if err := p.writeStatus(ctx); err != nil {
		return err
	}
	// Some metrics may have failed without stopping the decision; upstream
	// reports that after acting.
	return d.Err
}

// set sets a condition in the object's status.
func (p *pass) set(c autoscalingv2.HorizontalPodAutoscalerCondition) {
	setCondition(&p.obj.Status, c, metav1.NewTime(p.c.deps.Clock.Now()))
}

// warn records a warning event on the object.
func (p *pass) warn(reason, message string) {
	p.c.deps.Recorder.Event(p.obj.Source, corev1.EventTypeWarning, reason, message)
}

// setStatus rebuilds the status as upstream's setStatus: replica counts,
// metric statuses and observed generation replaced, conditions kept, last
// scale time moved on a rescale.
func (p *pass) setStatus(current, desired int32, statuses []autoscalingv2.MetricStatus, rescale bool) {
	generation := p.obj.Generation
	st := autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: &generation,
		LastScaleTime:      p.obj.Status.LastScaleTime,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
		CurrentMetrics:     statuses,
		Conditions:         p.obj.Status.Conditions,
	}
	if rescale {
		now := metav1.NewTime(p.c.deps.Clock.Now())
		st.LastScaleTime = &now
	}
	p.obj.Status = st
}

// writeStatus writes the status if it differs from the one read.
func (p *pass) writeStatus(ctx context.Context) error {
	if apiequality.Semantic.DeepEqual(p.original, &p.obj.Status) {
		return nil
	}
	rv, err := p.b.UpdateStatus(ctx, p.obj)
	if err != nil {
		p.warn("FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", p.obj.Name, err)
	}
	p.c.writes.wrote(p.key, rv)
	klog.FromContext(ctx).V(2).Info("Successfully updated status")
	return nil
}

// writeStatusOnFailure writes the status on a path that already fails; a
// write error is reported, not returned.
func (p *pass) writeStatusOnFailure(ctx context.Context) {
	if err := p.writeStatus(ctx); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Status update failed")
	}
}

// failMetrics ends a reconcile whose metrics allow no decision.
func (p *pass) failMetrics(ctx context.Context, current int32, statuses []autoscalingv2.MetricStatus, err error) error {
	p.setStatus(current, p.obj.Status.DesiredReplicas, statuses, false)
	p.writeStatusOnFailure(ctx)
	p.warn("FailedComputeMetricsReplicas", err.Error())
	return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", p.target, err)
}
