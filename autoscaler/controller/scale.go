package controller

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
)

// targetScale is the scale target's /scale and the resource it was read from.
type targetScale struct {
	scale    *autoscalingv1.Scale
	resource schema.GroupResource
}

// scaleError is a failure to read the scale: cause is what the event and the
// condition show, context what the returned error adds.
type scaleError struct {
	context string
	cause   error
}

func (e *scaleError) Error() string { return e.context + ": " + e.cause.Error() }
func (e *scaleError) Unwrap() error { return e.cause }

// getScale reads the scale target's /scale through each REST mapping of its
// kind in turn; the first mapping's error is reported if none works.
func (c *Controller) getScale(ctx context.Context, obj *Object) (*targetScale, *scaleError) {
	ref := obj.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, &scaleError{"invalid API version in scale target reference", err}
	}
	mappings, err := c.deps.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, &scaleError{"unable to determine resource for scale target reference", err}
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := c.deps.Scales.Scales(obj.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return &targetScale{scale: s, resource: gr}, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	target := fmt.Sprintf("%s/%s/%s", ref.Kind, obj.Namespace, ref.Name)
	return nil, &scaleError{"failed to query scale subresource for " + target, first}
}

// failGetScale ends a reconcile that could not read the scale.
func (p *pass) failGetScale(ctx context.Context, err *scaleError) error {
	p.warn("FailedGetScale", err.cause.Error())
	p.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
		fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err.cause)))
	p.writeStatusOnFailure(ctx)
	return err
}

// rescale writes the decided replica count to the scale, retrying on
// conflicts with a fresh read, then records the event, conditions and the
// scale event the behavior policies count.
func (p *pass) rescale(ctx context.Context, sc *targetScale, d decision.Decision, statuses []autoscalingv2.MetricStatus) error {
	current := sc.scale.Spec.Replicas
	scales := p.c.deps.Scales.Scales(p.obj.Namespace)
	s := sc.scale.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s.Spec.Replicas = d.Desired
		_, err := scales.Update(ctx, sc.resource, s, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		latest, getErr := scales.Get(ctx, sc.resource, s.Name, metav1.GetOptions{})
		if getErr != nil {
			utilruntime.HandleErrorWithContext(ctx, getErr, "Reading the latest scale failed", "scaleTarget", p.target)
		} else {
			s = latest
		}
		return err
	})
	if err != nil {
		p.c.deps.Recorder.Eventf(p.obj.Source, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", d.Desired, d.RescaleReason, err.Error())
		p.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
			fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err)))
		p.setStatus(current, p.obj.Status.DesiredReplicas, statuses, false)
		p.writeStatusOnFailure(ctx)
		return fmt.Errorf("failed to rescale %s: %w", p.target, err)
	}
	p.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", d.Desired)))
	p.c.deps.Recorder.Eventf(p.obj.Source, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", d.Desired, d.RescaleReason)
	p.hist.events = behavior.RecordScaleEvent(p.obj.Spec.Behavior, p.hist.events, current, d.Desired, p.c.deps.Clock.Now())
	klog.FromContext(ctx).Info("Successfully rescaled", "scaleTarget", p.target,
		"currentReplicas", current, "desiredReplicas", d.Desired, "reason", d.RescaleReason)
	p.set(decision.ScaledToZeroCondition(current, d.Desired, p.minReplicas(), decision.HasObjectOrExternal(p.obj.Spec.Metrics)))
	return nil
}
