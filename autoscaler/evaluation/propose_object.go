package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func proposeObject(r Reading, s Shared, kind MetricKind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := r.Spec.Object
	status := &autoscalingv2.ObjectMetricStatus{
		DescribedObject: src.DescribedObject,
		Metric:          autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
	}
	var res replicas.Result
	var err error
	if kind == ObjectValue {
		res, err = replicas.ObjectValue(r.Value, replicas.ValueInput{
			CurrentReplicas: s.SpecReplicas, Target: src.Target.Value.MilliValue(),
			Tolerances: s.Tolerances, Pods: s.Pods, Timestamp: r.Timestamp,
		})
		status.Current.Value = milli(res.Value)
	} else {
		res, err = replicas.ObjectAverageValue(r.Value, replicas.PerPodInput{
			StatusReplicas: s.StatusReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Tolerances: s.Tolerances, Timestamp: r.Timestamp,
		})
		status.Current.AverageValue = milli(res.Value)
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return res, autoscalingv2.MetricStatus{Type: r.Spec.Type, Object: status}, nil
}
