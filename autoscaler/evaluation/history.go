package evaluation

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// History is what an autoscaler carries from one evaluation to the next, as
// upstream keeps it in memory: the recommendations of the stabilization
// windows, the record of rescales the behavior policies count, what the
// proposal extensions remember, and the last good parameters of the
// ClusterProportional metrics. The zero History is a fresh start. A History
// is used by one evaluation at a time.
type History struct {
	Recommendations []behavior.Recommendation
	Events          behavior.ScaleEvents
	Extensions      ExtensionState
	// Proportional holds the last good parameters read from each referenced
	// ConfigMap, by "name/key" (so reordering spec.metrics keeps them apart).
	Proportional map[string]proportional.Params
}

// Seed records the current replica count as the first recommendation when
// there is none yet (upstream's first reconcile).
func (h *History) Seed(current int32, now time.Time) {
	h.Recommendations = behavior.SeedRecommendations(h.Recommendations, current, now)
}

// Keep stores what a decision leaves for the next evaluation: the proposal
// extensions' state and, when the count was normalized, the recommendations.
func (h *History) Keep(d Decision, ext ExtensionState) {
	h.Extensions = ext
	if d.Outcome != nil {
		h.Recommendations = d.Outcome.Recommendations
	}
}

// Rescaled records a rescale from prev to next written at now (only after
// the write succeeded).
func (h *History) Rescaled(b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	h.Events = behavior.RecordScaleEvent(b, h.Events, prev, next, now)
}
