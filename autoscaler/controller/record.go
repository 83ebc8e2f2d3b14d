package controller

import (
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// The decision record as the controller stores it: the pure evaluation's
// record, stamped with the identity of the replica that evaluated (I/O
// metadata the evaluation does not know).

// recordChanged reports whether obj's stored decision record is to be
// rewritten after res: its outcome changed, or it was not written by this
// replica (a new leader rewrites it once, so the record shows who decides
// now).
func (c *Controller) recordChanged(obj *Object, res *evaluation.Result) bool {
	return evaluation.Signature(&res.Outline) != obj.LastDecisionSignature || obj.LastDecisionBy != c.cfg.Identity
}

// buildRecord is Change.BuildRecord for res: its whole record, evaluatedBy
// this replica.
func (c *Controller) buildRecord(res *evaluation.Result) func() v1alpha1.DecisionRecord {
	return func() v1alpha1.DecisionRecord {
		rec := res.Record()
		rec.EvaluatedBy = c.cfg.Identity
		return rec
	}
}
