package evaluation

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// Condition types of the stages Paused and DryRun.
const (
	ConditionPaused autoscalingv2.HorizontalPodAutoscalerConditionType = "Paused"
	ConditionDryRun autoscalingv2.HorizontalPodAutoscalerConditionType = "DryRun"
)

// Stages of the holds in decision records.
const (
	StagePaused = "Paused"
	StageDryRun = "DryRun"
)

// Reasons why a decided change is not written.
const (
	HoldPaused = "paused"
	HoldDryRun = "dry-run"
)

// paused is the stage Paused: it holds back every write; the decision is
// still reported, and the condition says what would be written.
func (r *Result) paused(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if !r.in.Spec.Extensions.Paused {
		r.report(condition(ConditionPaused, corev1.ConditionFalse, "NotPaused", "scale writes are not paused"))
		return p, nil
	}
	cur := r.bounds.CurrentReplicas
	msg := "scale writes are paused"
	p, steps := holdBack(p, HoldPaused, StagePaused, cur, "paused: the scale is not written")
	if steps != nil {
		msg = fmt.Sprintf("scale writes are paused; would scale from %d to %d", cur, p.Replicas)
	}
	r.report(condition(ConditionPaused, corev1.ConditionTrue, "Paused", msg))
	return p, steps
}

// dryRun is the stage DryRun: it holds back every write and announces what
// a live run would write.
func (r *Result) dryRun(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if !r.in.Spec.Extensions.DryRun {
		r.report(condition(ConditionDryRun, corev1.ConditionFalse, "DryRunOff", "decisions are applied"))
		return p, nil
	}
	cur := r.bounds.CurrentReplicas
	msg := "dry run: decisions are recorded, never applied"
	p, steps := holdBack(p, HoldDryRun, StageDryRun, cur, "dry run: the scale is not written")
	if steps != nil {
		msg = fmt.Sprintf("dry run: would scale from %d to %d", cur, p.Replicas)
		r.Events = append(r.Events, Event{Type: corev1.EventTypeNormal, Reason: "DryRunRescale",
			Message: fmt.Sprintf("would scale from %d to %d", cur, p.Replicas)})
	}
	r.report(condition(ConditionDryRun, corev1.ConditionTrue, "DryRun", msg))
	return p, steps
}

// holdBack holds back p's pending write, if any, for the reason hold, with
// the step of stage from the decided count back to current; without a write
// to hold back (none decided, or an earlier stage held it) no step.
func holdBack(p proposal, hold, stage string, current int32, message string) (proposal, []v1alpha1.DecisionStep) {
	if !p.Write {
		return p, nil
	}
	p.Write, p.Held = false, hold
	return p, []v1alpha1.DecisionStep{step(stage, p.Replicas, current, message)}
}
