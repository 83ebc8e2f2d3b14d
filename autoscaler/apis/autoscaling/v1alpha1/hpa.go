package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// The conversions below are plain field copies: AutoscalerSpec and
// AutoscalerStatus have exactly the fields of their autoscaling/v2
// counterparts (a test fails when k8s.io/api adds one). Every function deep
// copies, so its result shares no memory with its argument and callers may
// mutate either freely (informer cache objects included). None of them
// defaults or validates: a nil MinReplicas stays nil, an empty Metrics stays
// empty.

// ToHPASpec converts an AutoscalerSpec to the equal
// HorizontalPodAutoscalerSpec. in must not be nil.
func ToHPASpec(in *AutoscalerSpec) autoscalingv2.HorizontalPodAutoscalerSpec {
	in = in.DeepCopy()
	return autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: in.ScaleTargetRef,
		MinReplicas:    in.MinReplicas,
		MaxReplicas:    in.MaxReplicas,
		Metrics:        HPAMetrics(in.Metrics),
		Behavior:       in.Behavior,
	}
}

// HPAMetrics returns the HPA metric sources of metrics, in order, without
// ebbflow's options and sources (a ClusterProportional metric is left out).
// nil stays nil.
func HPAMetrics(metrics []MetricSpec) []autoscalingv2.MetricSpec {
	if metrics == nil {
		return nil
	}
	out := make([]autoscalingv2.MetricSpec, 0, len(metrics))
	for _, m := range metrics {
		if m.Type != ClusterProportionalMetricSourceType {
			out = append(out, m.MetricSpec)
		}
	}
	return out
}

// ToHPAStatus converts an AutoscalerStatus to the equal
// HorizontalPodAutoscalerStatus. in must not be nil.
func ToHPAStatus(in *AutoscalerStatus) autoscalingv2.HorizontalPodAutoscalerStatus {
	in = in.DeepCopy()
	return autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.ObservedGeneration,
		LastScaleTime:      in.LastScaleTime,
		CurrentReplicas:    in.CurrentReplicas,
		DesiredReplicas:    in.DesiredReplicas,
		CurrentMetrics:     hpaMetricStatuses(in.CurrentMetrics),
		Conditions:         in.Conditions,
	}
}

// FromHPAStatus converts a HorizontalPodAutoscalerStatus to the equal
// AutoscalerStatus. in must not be nil.
func FromHPAStatus(in *autoscalingv2.HorizontalPodAutoscalerStatus) AutoscalerStatus {
	in = in.DeepCopy()
	return AutoscalerStatus{
		ObservedGeneration: in.ObservedGeneration,
		LastScaleTime:      in.LastScaleTime,
		CurrentReplicas:    in.CurrentReplicas,
		DesiredReplicas:    in.DesiredReplicas,
		CurrentMetrics:     fromHPAMetricStatuses(in.CurrentMetrics),
		Conditions:         in.Conditions,
	}
}

// hpaMetricStatuses returns the HPA metric statuses, without the
// ClusterProportional ones. nil stays nil.
func hpaMetricStatuses(in []MetricStatus) []autoscalingv2.MetricStatus {
	if in == nil {
		return nil
	}
	out := make([]autoscalingv2.MetricStatus, 0, len(in))
	for _, m := range in {
		if m.Type != ClusterProportionalMetricSourceType {
			out = append(out, m.MetricStatus)
		}
	}
	return out
}

func fromHPAMetricStatuses(in []autoscalingv2.MetricStatus) []MetricStatus {
	if in == nil {
		return nil
	}
	out := make([]MetricStatus, len(in))
	for i, m := range in {
		out[i] = MetricStatus{MetricStatus: m}
	}
	return out
}
