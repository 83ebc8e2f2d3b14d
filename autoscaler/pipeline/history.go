package pipeline

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
)

// History is what an autoscaler carries from one evaluation to the next, as
// upstream keeps it in memory: the recommendations of the stabilization
// windows, the record of rescales the behavior policies count, and what the
// proposal extensions remember. The zero History is a fresh start.
type History struct {
	Recommendations []behavior.Recommendation
	Events          behavior.ScaleEvents
	Extensions      adjust.State
}

// Seed records the current replica count as the first recommendation when
// there is none yet (upstream's first reconcile). Call it before deciding.
func (h *History) Seed(current int32, now time.Time) {
	h.Recommendations = behavior.SeedRecommendations(h.Recommendations, current, now)
}

// Keep stores what a decision leaves for the next evaluation: the proposal
// extensions' state and, when the count was normalized, the recommendations.
func (h *History) Keep(d Decided) {
	h.Extensions = d.Ext.State
	if d.D.Outcome != nil {
		h.Recommendations = d.D.Outcome.Recommendations
	}
}

// Rescaled records a rescale from prev to next written at now (call it only
// after the write succeeded).
func (h *History) Rescaled(b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	h.Events = behavior.RecordScaleEvent(b, h.Events, prev, next, now)
}
