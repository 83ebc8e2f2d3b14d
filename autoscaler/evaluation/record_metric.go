package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

func metricRecord(m Metric) v1alpha1.MetricRecord {
	spec := m.Reading.Spec
	r := v1alpha1.MetricRecord{Type: string(spec.Type), Name: metricName(m)}
	if !m.Reading.Timestamp.IsZero() {
		t := metav1.NewTime(m.Reading.Timestamp)
		r.Timestamp = &t
	}
	if m.Evaluated.Proposal.Err != nil {
		r.Error = cut(m.Evaluated.Proposal.Err.Error())
		return r
	}
	n := m.Evaluated.Proposal.Replicas
	r.Replicas, r.Reason = &n, string(m.Evaluated.Result.Reason)
	if m.Reason != "" {
		r.Reason = cut(m.Reason)
	}
	r.TargetType, r.Target = target(spec)
	r.Value = value(m.Evaluated.Status, r.TargetType)
	return r
}

// metricName names a metric of a record: its own Name, or MetricName.
func metricName(m Metric) string {
	if m.Name != "" {
		return cut(m.Name)
	}
	return cut(MetricName(m.Reading.Spec))
}

// MetricName names a metric in records and messages: the metric's name, or
// the resource (and container) of Resource metrics.
func MetricName(spec autoscalingv2.MetricSpec) string {
	switch {
	case spec.Resource != nil:
		return string(spec.Resource.Name)
	case spec.ContainerResource != nil:
		return string(spec.ContainerResource.Name) + "/" + spec.ContainerResource.Container
	case spec.Pods != nil:
		return spec.Pods.Metric.Name
	case spec.Object != nil:
		return spec.Object.Metric.Name + " on " + spec.Object.DescribedObject.Kind + "/" + spec.Object.DescribedObject.Name
	case spec.External != nil:
		return spec.External.Metric.Name
	}
	return ""
}

func target(spec autoscalingv2.MetricSpec) (string, *resource.Quantity) {
	var t autoscalingv2.MetricTarget
	switch {
	case spec.Resource != nil:
		t = spec.Resource.Target
	case spec.ContainerResource != nil:
		t = spec.ContainerResource.Target
	case spec.Pods != nil:
		t = spec.Pods.Target
	case spec.Object != nil:
		t = spec.Object.Target
	case spec.External != nil:
		t = spec.External.Target
	}
	switch {
	case t.AverageValue != nil:
		return string(autoscalingv2.AverageValueMetricType), copyQ(t.AverageValue)
	case t.Value != nil:
		return string(autoscalingv2.ValueMetricType), copyQ(t.Value)
	case t.AverageUtilization != nil:
		return string(autoscalingv2.UtilizationMetricType), resource.NewQuantity(int64(*t.AverageUtilization), resource.DecimalSI)
	}
	return string(t.Type), nil
}

func value(s autoscalingv2.MetricStatus, targetType string) *resource.Quantity {
	var v autoscalingv2.MetricValueStatus
	switch {
	case s.Resource != nil:
		v = s.Resource.Current
	case s.ContainerResource != nil:
		v = s.ContainerResource.Current
	case s.Pods != nil:
		v = s.Pods.Current
	case s.Object != nil:
		v = s.Object.Current
	case s.External != nil:
		v = s.External.Current
	}
	switch {
	case targetType == string(autoscalingv2.UtilizationMetricType) && v.AverageUtilization != nil:
		return resource.NewQuantity(int64(*v.AverageUtilization), resource.DecimalSI)
	case v.AverageValue != nil:
		return copyQ(v.AverageValue)
	case v.Value != nil:
		return copyQ(v.Value)
	}
	return nil
}

func copyQ(q *resource.Quantity) *resource.Quantity {
	c := q.DeepCopy()
	return &c
}
