package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Scratch holds the buffers of the proposals for a caller that runs many
// evaluations one after the other (a replay). The zero Scratch is ready; a
// Result made with it is valid until the Scratch's next use.
type Scratch struct {
	conds     []autoscalingv2.HorizontalPodAutoscalerCondition
	metrics   []Metric
	statuses  []autoscalingv2.MetricStatus
	proposals []Proposal
}

// buffers returns zeroed slices of n entries (with room for extra metrics
// and proposals), from s when set.
func (s *Scratch) buffers(n, extra int) ([]Metric, []autoscalingv2.MetricStatus, []Proposal) {
	if s == nil {
		return make([]Metric, n, n+extra), make([]autoscalingv2.MetricStatus, n), make([]Proposal, 0, n+extra)
	}
	if cap(s.metrics) < n+extra {
		s.metrics = make([]Metric, n, n+extra)
	}
	if cap(s.statuses) < n {
		s.statuses = make([]autoscalingv2.MetricStatus, n)
	}
	if cap(s.proposals) < n+extra {
		s.proposals = make([]Proposal, 0, n+extra)
	}
	s.metrics, s.statuses = s.metrics[:n], s.statuses[:n]
	clear(s.metrics)
	clear(s.statuses)
	return s.metrics, s.statuses, s.proposals[:0]
}

// conditions returns a copy of cs the result may change, in s's buffer when
// set (cs may be that buffer: the status of the Scratch's last result).
func (s *Scratch) conditions(cs []autoscalingv2.HorizontalPodAutoscalerCondition) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if s == nil {
		return append([]autoscalingv2.HorizontalPodAutoscalerCondition(nil), cs...)
	}
	s.conds = append(s.conds[:0], cs...)
	return s.conds
}
