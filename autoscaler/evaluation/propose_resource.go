package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// ResourceSource is the common part of Resource and ContainerResource specs.
type ResourceSource struct {
	Name      corev1.ResourceName
	Container string
	Target    autoscalingv2.MetricTarget
}

// ResourceOf returns the resource part of a Resource or ContainerResource
// spec; spec must have been classified as one.
func ResourceOf(spec autoscalingv2.MetricSpec) ResourceSource {
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		r := spec.ContainerResource
		return ResourceSource{Name: r.Name, Container: r.Container, Target: r.Target}
	}
	return ResourceSource{Name: spec.Resource.Name, Target: spec.Resource.Target}
}

func proposeResource(r Reading, s Shared, kind MetricKind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := ResourceOf(r.Spec)
	var res replicas.Result
	var err error
	current := autoscalingv2.MetricValueStatus{}
	if kind == ResourceUtilization || kind == ContainerResourceUtilization {
		res, err = replicas.ResourceUtilization(replicas.UtilizationInput{
			CurrentReplicas: s.SpecReplicas, TargetUtilization: *src.Target.AverageUtilization,
			Resource: src.Name, Container: src.Container, Tolerances: s.Tolerances,
			Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
		})
		utilization := res.Utilization
		current.AverageUtilization = &utilization
	} else {
		res, err = replicas.PodAverage(replicas.AverageInput{
			CurrentReplicas: s.SpecReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Resource: src.Name, Tolerances: s.Tolerances,
			Pods: s.Pods, Samples: r.Samples, Timing: s.Timing, Timestamp: r.Timestamp,
		})
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	current.AverageValue = usageQuantity(src.Name, res.Value)
	status := autoscalingv2.MetricStatus{Type: r.Spec.Type}
	if r.Spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: src.Name, Container: src.Container, Current: current}
	} else {
		status.Resource = &autoscalingv2.ResourceMetricStatus{Name: src.Name, Current: current}
	}
	return res, status, nil
}

// usageQuantity formats a resource usage as upstream reports it: memory in
// BinarySI (as metrics-server does), everything else in DecimalSI.
func usageQuantity(name corev1.ResourceName, v int64) *resource.Quantity {
	if name == corev1.ResourceMemory {
		return resource.NewMilliQuantity(v, resource.BinarySI)
	}
	return milli(v)
}
