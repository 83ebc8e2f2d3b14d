package evaluation

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// Signature is a compact key of a record's outcome: two records have the same
// signature exactly when they describe the same outcome: the same replicas
// before and after, the same winning metric, the same steps (by stage),
// whether the scale was written and why not, and the same error (time,
// metric values and messages may differ). "" for a nil record.
func Signature(r *v1alpha1.DecisionRecord) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	b.Grow(64 + len(r.WinningMetric) + len(r.Error) + len(r.NotScaledReason) + 16*len(r.Steps))
	fmt.Fprintf(&b, "%s|%d|%d|%t|", r.Outcome, r.CurrentReplicas, r.DesiredReplicas, r.Scaled)
	for _, s := range []string{r.WinningMetric, r.NotScaledReason, r.Error} {
		b.WriteString(strconv.Quote(s))
		b.WriteByte('|')
	}
	for _, s := range r.Steps {
		b.WriteString(s.Stage)
		b.WriteByte(',')
	}
	return b.String()
}

// StageNames lists the stages of a record's steps, in order.
func StageNames(r *v1alpha1.DecisionRecord) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Stage
	}
	return out
}
