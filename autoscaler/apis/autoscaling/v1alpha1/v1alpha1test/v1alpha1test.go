// Package v1alpha1test holds what tests of Autoscalers share and the product
// never needs: an Autoscaler's spec written as the HorizontalPodAutoscaler spec
// it extends (the controller reads Autoscalers and HPAs as they are, and
// converts only the other way, v1alpha1.ToHPASpec).
package v1alpha1test

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// FromHPASpec converts a HorizontalPodAutoscalerSpec to the equal
// AutoscalerSpec. in must not be nil.
func FromHPASpec(in *autoscalingv2.HorizontalPodAutoscalerSpec) v1alpha1.AutoscalerSpec {
	in = in.DeepCopy()
	return v1alpha1.AutoscalerSpec{
		ScaleTargetRef: in.ScaleTargetRef,
		MinReplicas:    in.MinReplicas,
		MaxReplicas:    in.MaxReplicas,
		Metrics:        fromHPAMetrics(in.Metrics),
		Behavior:       in.Behavior,
	}
}

func fromHPAMetrics(metrics []autoscalingv2.MetricSpec) []v1alpha1.MetricSpec {
	if metrics == nil {
		return nil
	}
	out := make([]v1alpha1.MetricSpec, len(metrics))
	for i, m := range metrics {
		out[i] = v1alpha1.MetricSpec{MetricSpec: m}
	}
	return out
}
