package evaluation

import (
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// MetricKind is the calculation a metric spec calls for; each maps to one function
// of package replicas.
type MetricKind string

// Kinds of metric calculation.
const (
	ResourceUtilization          MetricKind = "ResourceUtilization"          // replicas.ResourceUtilization
	ResourceAverageValue         MetricKind = "ResourceAverageValue"         // replicas.PodAverage with the resource
	ContainerResourceUtilization MetricKind = "ContainerResourceUtilization" // replicas.ResourceUtilization with the container
	ContainerResourceAverage     MetricKind = "ContainerResourceAverageValue"
	PodsAverageValue             MetricKind = "PodsAverageValue"     // replicas.PodAverage without a resource
	ObjectValue                  MetricKind = "ObjectValue"          // replicas.ObjectValue
	ObjectAverageValue           MetricKind = "ObjectAverageValue"   // replicas.ObjectAverageValue
	ExternalValue                MetricKind = "ExternalValue"        // replicas.ExternalValue
	ExternalAverageValue         MetricKind = "ExternalAverageValue" // replicas.ExternalAverageValue
)

// Classify returns the calculation spec calls for, choosing the target field
// in upstream's order (an averageValue wins for Resource and External; Object
// follows target.type). A spec upstream would reject returns upstream's error
// text (or, where upstream would crash on a nil field, a similar one).
func Classify(spec autoscalingv2.MetricSpec) (MetricKind, error) {
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			return "", errors.New("invalid resource metric source: resource is not set")
		}
		return resourceKind(spec.Resource.Target, ResourceAverageValue, ResourceUtilization)
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			return "", errors.New("invalid resource metric source: containerResource is not set")
		}
		return resourceKind(spec.ContainerResource.Target, ContainerResourceAverage, ContainerResourceUtilization)
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil || spec.Pods.Target.AverageValue == nil {
			return "", errors.New("invalid pods metric source: no average value target was set")
		}
		return PodsAverageValue, nil
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object != nil {
			t := spec.Object.Target
			if t.Type == autoscalingv2.ValueMetricType && t.Value != nil {
				return ObjectValue, nil
			}
			if t.Type == autoscalingv2.AverageValueMetricType && t.AverageValue != nil {
				return ObjectAverageValue, nil
			}
		}
		return "", errors.New("invalid object metric source: neither a value target nor an average value target was set")
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External != nil && spec.External.Target.AverageValue != nil {
			return ExternalAverageValue, nil
		}
		if spec.External != nil && spec.External.Target.Value != nil {
			return ExternalValue, nil
		}
		return "", errors.New("invalid external metric source: neither a value target nor an average value target was set")
	}
	return "", fmt.Errorf("unknown metric source type %q", string(spec.Type))
}

func resourceKind(t autoscalingv2.MetricTarget, average, utilization MetricKind) (MetricKind, error) {
	if t.AverageValue != nil {
		return average, nil
	}
	if t.AverageUtilization == nil {
		return "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	return utilization, nil
}

// metricDescription names a metric as upstream's ScalingActive message and
// rescale events do, including upstream's wording of an Object AverageValue
// metric as "external metric". An invalid spec yields "".
func metricDescription(spec autoscalingv2.MetricSpec) string {
	kind, err := Classify(spec)
	if err != nil {
		return ""
	}
	switch kind {
	case ResourceAverageValue:
		return fmt.Sprintf("%s resource", spec.Resource.Name)
	case ContainerResourceAverage:
		return fmt.Sprintf("%s resource", spec.ContainerResource.Name)
	case ResourceUtilization:
		return fmt.Sprintf("%s resource utilization (percentage of request)", spec.Resource.Name)
	case ContainerResourceUtilization:
		return fmt.Sprintf("%s container resource utilization (percentage of request)", spec.ContainerResource.Name)
	case PodsAverageValue:
		return fmt.Sprintf("pods metric %s", spec.Pods.Metric.Name)
	case ObjectValue:
		return fmt.Sprintf("%s metric %s", spec.Object.DescribedObject.Kind, spec.Object.Metric.Name)
	case ObjectAverageValue:
		return fmt.Sprintf("external metric %s(%+v)", spec.Object.Metric.Name, spec.Object.Metric.Selector)
	}
	return fmt.Sprintf("external metric %s(%+v)", spec.External.Metric.Name, spec.External.Metric.Selector)
}
