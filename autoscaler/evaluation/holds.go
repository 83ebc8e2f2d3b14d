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
	return r.hold(p, r.in.Spec.Extensions.Paused, pausedHold)
}

// dryRun is the stage DryRun: it holds back every write and announces what
// a live run would write.
func (r *Result) dryRun(p proposal) (proposal, []v1alpha1.DecisionStep) {
	return r.hold(p, r.in.Spec.Extensions.DryRun, dryRunHold)
}

// holdKind is what differs between the holds: names and wording.
type holdKind struct {
	// stage names the step and the True condition's reason; condition its
	// type; reason the Result's held.
	stage     string
	condition autoscalingv2.HorizontalPodAutoscalerConditionType
	reason    string
	// off is the False condition's reason and message; on the True one's
	// message, would its format with a held write (from, to); step the
	// step's message.
	off       [2]string
	on, would string
	step      string
	// announce records an event of a held write ("would scale from %d to
	// %d").
	announce string
}

var (
	pausedHold = holdKind{stage: StagePaused, condition: ConditionPaused, reason: HoldPaused,
		off: [2]string{"NotPaused", "scale writes are not paused"},
		on:  "scale writes are paused", would: "scale writes are paused; would scale from %d to %d",
		step: "paused: the scale is not written"}
	dryRunHold = holdKind{stage: StageDryRun, condition: ConditionDryRun, reason: HoldDryRun,
		off: [2]string{"DryRunOff", "decisions are applied"},
		on:  "dry run: decisions are recorded, never applied", would: "dry run: would scale from %d to %d",
		step: "dry run: the scale is not written", announce: "DryRunRescale"}
)

// hold is the stage of a hold of kind k, on when set: it holds back p's
// pending write, if any, with the step from the decided count back to the
// current one (none without a write to hold back: none decided, or an
// earlier hold held it), and reports its condition.
func (r *Result) hold(p proposal, set bool, k holdKind) (proposal, []v1alpha1.DecisionStep) {
	if !set {
		r.report(condition(k.condition, corev1.ConditionFalse, k.off[0], k.off[1]))
		return p, nil
	}
	cur, msg := r.bounds.CurrentReplicas, k.on
	var steps []v1alpha1.DecisionStep
	if p.Write {
		p.Write, p.Held = false, k.reason
		steps = append(steps, step(k.stage, p.Replicas, cur, k.step))
		msg = fmt.Sprintf(k.would, cur, p.Replicas)
		if k.announce != "" {
			r.Events = append(r.Events, Event{Type: corev1.EventTypeNormal, Reason: k.announce,
				Message: fmt.Sprintf("would scale from %d to %d", cur, p.Replicas)})
		}
	}
	r.report(condition(k.condition, corev1.ConditionTrue, k.stage, msg))
	return p, steps
}
