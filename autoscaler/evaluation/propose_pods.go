package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func proposePods(r Reading, s Shared) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := r.Spec.Pods
	res, err := replicas.PodAverage(replicas.AverageInput{
		CurrentReplicas: s.SpecReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
		Tolerances: s.Tolerances, Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
	})
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return res, autoscalingv2.MetricStatus{Type: r.Spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
		Metric:  autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
		Current: autoscalingv2.MetricValueStatus{AverageValue: milli(res.Value)},
	}}, nil
}
