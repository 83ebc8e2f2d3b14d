package controller

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// logEvaluated writes the outline of one evaluation and the winning metric's
// reading (value, target, proposal, reason), so that a log alone explains a
// recommendation.
func logEvaluated(logger klog.Logger, res *evaluation.Result, scaleTarget string) {
	out := &res.Outline
	kv := []any{"outcome", out.Outcome, "currentReplicas", out.CurrentReplicas,
		"desiredReplicas", out.DesiredReplicas, "winningMetric", out.WinningMetric}
	if w := res.Winner(); w != nil {
		kv = append(kv, "winningValue", quantityString(w.Value), "winningTarget", quantityString(w.Target),
			"winningTargetType", w.TargetType, "proposal", ptrInt32(w.Replicas), "winningReason", w.Reason)
	}
	kv = append(kv, "steps", evaluation.StageNames(out), "scaled", out.Scaled,
		"notScaledReason", out.NotScaledReason, "scaleTarget", scaleTarget)
	logger.Info("Evaluated", kv...)
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

func ptrInt32(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}
