package evaluation

import (
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
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

// failurePrefix starts every ScalingActive=False message of a failed metric;
// the rest is what upstream's per-metric warning event says.
const failurePrefix = "the HPA was unable to compute the replica count: "

// failure is the Proposal of a metric that failed with cause: the error a
// replicas function returned, a FetchError, or the error of Classify. Its Err
// and Condition carry upstream's wording for the metric's kind; the
// condition's reason and cause's wrapped form are what upstream's FailedGet*
// warning event shows.
func failure(spec autoscalingv2.MetricSpec, cause error) Proposal {
	kind, _ := Classify(spec)
	var reason string
	var inner, outer error
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		reason, inner = "FailedGetObjectMetric", cause
		wrapped := cause
		if kind == ObjectAverageValue {
			wrapped = fmt.Errorf("failed to get %s object metric: %w", spec.Object.Metric.Name, cause)
		}
		outer = fmt.Errorf("failed to get object metric value: %w", wrapped)
	case autoscalingv2.PodsMetricSourceType:
		reason, inner = "FailedGetPodsMetric", cause
		outer = fmt.Errorf("failed to get pods metric value: %w", cause)
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		reason, inner, outer = resourceFailure(spec, kind, cause)
	case autoscalingv2.ExternalMetricSourceType:
		reason, inner = "FailedGetExternalMetric", cause
		outer = externalFailure(spec, kind, cause)
	default:
		reason, inner, outer = "InvalidMetricSourceType", cause, cause
	}
	return Proposal{
		Err: outer,
		Condition: scalingActive(corev1.ConditionFalse, reason,
			fmt.Sprintf("the HPA was unable to compute the replica count: %v", inner)),
	}
}

func resourceFailure(spec autoscalingv2.MetricSpec, kind MetricKind, cause error) (string, error, error) {
	reason, name, outerFormat, subject := "FailedGetResourceMetric", corev1.ResourceName(""), "failed to get %s resource metric value: %w", ""
	if spec.Resource != nil {
		name, subject = spec.Resource.Name, string(spec.Resource.Name)
	}
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		reason, outerFormat = "FailedGetContainerResourceMetric", "failed to get %s container metric value: %w"
		if spec.ContainerResource != nil {
			name, subject = spec.ContainerResource.Name, spec.ContainerResource.Container
		}
	}
	inner := cause
	switch kind {
	case ResourceAverageValue, ContainerResourceAverage:
		inner = fmt.Errorf("failed to get %s usage: %w", name, cause)
	case ResourceUtilization, ContainerResourceUtilization:
		inner = fmt.Errorf("failed to get %s utilization: %w", name, cause)
	}
	return reason, inner, fmt.Errorf(outerFormat, subject, inner)
}

func externalFailure(spec autoscalingv2.MetricSpec, kind MetricKind, cause error) error {
	name := ""
	if spec.External != nil {
		name = spec.External.Metric.Name
	}
	wrapped := cause
	switch kind {
	case ExternalAverageValue:
		wrapped = fmt.Errorf("failed to get %s external metric: %w", name, cause)
	case ExternalValue:
		wrapped = fmt.Errorf("failed to get external metric %s: %w", name, cause)
	}
	return fmt.Errorf("failed to get %s external metric value: %w", name, wrapped)
}

// fetchError wraps an error from reading a metric's values as upstream's
// replica calculator does, before failure wraps it further. namespace is the
// autoscaler's namespace.
func fetchError(spec autoscalingv2.MetricSpec, namespace string, err error) error {
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		return fmt.Errorf("unable to get metrics for resource %s: %w", spec.Resource.Name, err)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		return fmt.Errorf("unable to get metrics for resource %s: %w", spec.ContainerResource.Name, err)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		return fmt.Errorf("unable to get metric %s: %w", spec.Pods.Metric.Name, err)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		o := spec.Object
		return fmt.Errorf("unable to get metric %s on %s %s/%s: %w", o.Metric.Name, o.DescribedObject.Kind, namespace, o.DescribedObject.Name, err)
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		e := spec.External
		return fmt.Errorf("unable to get external metric %s/%s/%+v: %w", namespace, e.Metric.Name, e.Metric.Selector, err)
	}
	return err
}
