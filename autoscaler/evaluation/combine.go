package evaluation

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// ErrNoMetrics: an autoscaler with no metrics. Upstream cannot reach this (the
// API server defaults metrics to 80% cpu); here it stops scaling.
var ErrNoMetrics = errors.New("no metrics to compute a replica count from")

// Proposal is one metric's outcome.
type Proposal struct {
	// Metric describes the metric (see MetricDescription).
	Metric    string
	Replicas  int32
	Timestamp time.Time
	// Err is non-nil when the metric failed; Replicas is then ignored.
	Err error
	// Condition is the ScalingActive=False condition reported when this is the
	// first failed metric (see Failure).
	Condition autoscalingv2.HorizontalPodAutoscalerCondition
}

// Aggregate is the combination of all proposals.
type Aggregate struct {
	// Replicas, Metric and Timestamp come from the winning proposal.
	Replicas  int32
	Metric    string
	Timestamp time.Time
	// Invalid counts failed proposals; FirstFailure is the index of the first
	// one, or -1.
	Invalid      int
	FirstFailure int
	// Err is non-nil when any proposal failed, wrapping the first error.
	Err error
	// Usable is false when no scaling may happen: every metric failed, or
	// some failed and Replicas is below the spec replicas.
	Usable bool
	// ScalingActive is the condition to set: True/ValidMetricFound when
	// Usable, else the first failure's condition.
	ScalingActive autoscalingv2.HorizontalPodAutoscalerCondition
}

// Combine takes the maximum over the successful proposals, as upstream's
// computeReplicasForMetrics. Ties keep the earlier metric, except that a
// running maximum of zero is replaced by any later proposal (so among
// proposals that are all zero the last one names the metric).
func Combine(proposals []Proposal, specReplicas int32) Aggregate {
	a := Aggregate{FirstFailure: -1}
	if len(proposals) == 0 {
		a.Err = ErrNoMetrics
		a.ScalingActive = scalingActive(corev1.ConditionFalse, "NoMetrics",
			fmt.Sprintf("the HPA was unable to compute the replica count: %v", ErrNoMetrics))
		return a
	}
	for i, p := range proposals {
		if p.Err != nil {
			if a.Invalid == 0 {
				a.FirstFailure = i
			}
			a.Invalid++
			continue
		}
		if a.Replicas == 0 || p.Replicas > a.Replicas {
			a.Replicas, a.Metric, a.Timestamp = p.Replicas, p.Metric, p.Timestamp
		}
	}
	if a.Invalid > 0 {
		a.Err = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w",
			a.Invalid, len(proposals), proposals[a.FirstFailure].Err)
	}
	if a.Invalid >= len(proposals) || (a.Invalid > 0 && a.Replicas < specReplicas) {
		a.ScalingActive = proposals[a.FirstFailure].Condition
		return a
	}
	a.Usable = true
	a.ScalingActive = scalingActive(corev1.ConditionTrue, "ValidMetricFound",
		fmt.Sprintf("the HPA was able to successfully calculate a replica count from %s", a.Metric))
	return a
}

func scalingActive(status corev1.ConditionStatus, reason, message string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScalingActive,
		Status:  status,
		Reason:  reason,
		Message: message,
	}
}
