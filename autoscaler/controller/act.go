package controller

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
)

// act writes the adjusted replica count to the target's /scale, retrying on
// conflicts with a fresh read, then sets the conditions and queues the event
// upstream does and records the scale event the behavior policies count. It is
// the only stage that writes the target.
func (ev *evaluation) act(ctx context.Context, obs observation, d decision.Decision, adj adjust.Result) (bool, error) {
	sc, current := obs.scale, obs.current
	scales := ev.c.deps.Scales.Scales(ev.obj.Namespace)
	s := sc.scale.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s.Spec.Replicas = adj.Desired
		_, err := scales.Update(ctx, sc.resource, s, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		latest, getErr := scales.Get(ctx, sc.resource, s.Name, metav1.GetOptions{})
		if getErr != nil {
			utilruntime.HandleErrorWithContext(ctx, getErr, "Reading the latest scale failed", "scaleTarget", ev.target)
		} else {
			s = latest
		}
		return err
	})
	if err != nil {
		ev.warn("FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", adj.Desired, d.RescaleReason, err.Error()))
		ev.set(condition(autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
			fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err)))
		return false, fmt.Errorf("failed to rescale %s: %w", ev.target, err)
	}
	ev.set(condition(autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
		fmt.Sprintf("the HPA controller was able to update the target scale to %d", adj.Desired)))
	ev.normal("SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", adj.Desired, d.RescaleReason))
	ev.hist.Rescaled(ev.obj.Spec.Behavior, current, adj.Desired, ev.c.deps.Clock.Now())
	klog.FromContext(ctx).Info("Successfully rescaled", "scaleTarget", ev.target,
		"currentReplicas", current, "desiredReplicas", adj.Desired, "reason", d.RescaleReason)
	ev.set(decision.ScaledToZeroCondition(current, adj.Desired, ev.minReplicas(), decision.HasObjectOrExternal(ev.obj.Spec.Metrics)))
	return true, nil
}
