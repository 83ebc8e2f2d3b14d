package evaluation

import (
	"fmt"
	"math"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// steps lists, in order, the rules that changed the winning proposal.
func steps(in recordInput, messages bool) []v1alpha1.DecisionStep {
	d, cur := in.Decision, in.CurrentReplicas
	var out []v1alpha1.DecisionStep
	add := func(stage string, from, to int32, msg string) {
		s := v1alpha1.DecisionStep{Stage: stage, From: from, To: to}
		if messages {
			s.Message = cut(msg)
		}
		out = append(out, s)
	}
	switch d.Gate.Action {
	case ScalingDisabled:
		add(StageScalingDisabled, cur, cur, "the target has zero replicas and the autoscaler did not scale it to zero")
	case ClampToBounds:
		stage := StageMaxReplicas
		if d.Gate.Desired > cur {
			stage = StageMinReplicas
		}
		add(stage, cur, d.Gate.Desired, d.Gate.Reason)
	}
	if w := winner(in); w != nil {
		if t, ok := toleranceStep(w, cur, messages); ok {
			out = append(out, t)
		}
	}
	if ov := d.Override; ov != nil && d.Aggregate != nil {
		to := ov.Replicas
		if ov.Hold {
			to = cur
		}
		add(ov.Stage, max(d.Aggregate.Replicas, 0), to, ov.Message)
	}
	if o := d.Outcome; o != nil && d.Aggregate != nil {
		proposal := max(d.Aggregate.Replicas, 0)
		if d.Override != nil {
			proposal = max(d.Override.Replicas, 0)
		}
		if o.Stabilized != proposal {
			stage := StageScaleDownStabilization
			if o.AbleToScale.Reason == behavior.ReasonScaleUpStabilized {
				stage = StageScaleUpStabilization
			}
			add(stage, proposal, o.Stabilized, o.AbleToScale.Message)
		}
		if o.ScalingLimited.Status == corev1.ConditionTrue {
			msg := ""
			if messages {
				msg = o.ScalingLimited.Message + policies(o.ScalingLimited.Reason, in.Behavior)
			}
			add(limitStage(o.ScalingLimited.Reason, in.Behavior), o.Stabilized, o.Replicas, msg)
		}
		if d.FromZeroFloor {
			add(StageScaleFromZero, o.Replicas, d.Desired, "scaling up from zero replicas: at least minReplicas")
		}
	}
	for _, s := range in.Adjusted.Steps {
		add(s.Stage, s.From, s.To, s.Message)
	}
	return out
}

// winner returns the metric whose proposal won, if any.
func winner(in recordInput) *Metric {
	a := in.Decision.Aggregate
	if a == nil || !a.Usable {
		return nil
	}
	for i := range in.Metrics {
		p := in.Metrics[i].Evaluated.Proposal
		if p.Err == nil && p.Metric == a.Metric && p.Replicas == a.Replicas {
			return &in.Metrics[i]
		}
	}
	return nil
}

// toleranceStep reports a winning proposal held at the current count by the
// tolerance (or by the conservative recomputation for missing pods): from is
// the count the ratio alone would give.
func toleranceStep(w *Metric, current int32, messages bool) (v1alpha1.DecisionStep, bool) {
	res := w.Evaluated.Result
	switch res.Reason {
	case replicas.ReasonWithinTolerance, replicas.ReasonRecomputedWithinTolerance,
		replicas.ReasonRecomputedDirectionFlip, replicas.ReasonRecomputedCountFlip:
	default:
		return v1alpha1.DecisionStep{}, false
	}
	raw := current
	if r := res.UsageRatio * float64(current); r > 0 && r < math.MaxInt32 {
		raw = int32(math.Ceil(r))
	}
	if !messages {
		return v1alpha1.DecisionStep{Stage: StageTolerance, From: raw, To: current}, true
	}
	msg := fmt.Sprintf("usage ratio %.3f within tolerance (down %.2f, up %.2f): %s",
		res.UsageRatio, res.Tolerances.ScaleDown, res.Tolerances.ScaleUp, res.Reason.Describe())
	if res.Reason != replicas.ReasonWithinTolerance {
		msg = fmt.Sprintf("usage ratio %.3f: %s", res.UsageRatio, res.Reason.Describe())
	}
	return v1alpha1.DecisionStep{Stage: StageTolerance, From: raw, To: current, Message: cut(msg)}, true
}

func limitStage(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	switch reason {
	case behavior.ReasonTooFewReplicas:
		return StageMinReplicas
	case behavior.ReasonTooManyReplicas:
		return StageMaxReplicas
	case behavior.ReasonScaleUpLimit:
		if b == nil {
			return StageScaleUpLimit
		}
		return StageScaleUpPolicy
	case behavior.ReasonScaleDownLimit:
		return StageScaleDownPolicy
	}
	return reason
}

// policies describes the policies of the limiting direction, e.g.
// " (policies: Percent 100 per 15s, Pods 4 per 15s; selectPolicy Max)".
func policies(reason string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	if reason == behavior.ReasonScaleUpLimit && b == nil {
		return " (without behavior: at most max(2×current, 4))"
	}
	if b == nil {
		return ""
	}
	rules := b.ScaleUp
	if reason == behavior.ReasonScaleDownLimit {
		rules = b.ScaleDown
	} else if reason != behavior.ReasonScaleUpLimit {
		return ""
	}
	if rules == nil || len(rules.Policies) == 0 {
		return " (default policies)"
	}
	parts := make([]string, len(rules.Policies))
	for i, p := range rules.Policies {
		parts[i] = fmt.Sprintf("%s %d per %ds", p.Type, p.Value, p.PeriodSeconds)
	}
	sel := autoscalingv2.MaxChangePolicySelect
	if rules.SelectPolicy != nil {
		sel = *rules.SelectPolicy
	}
	return fmt.Sprintf(" (policies: %s; selectPolicy %s)", strings.Join(parts, ", "), sel)
}
