package controller

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// resourceSource is the common part of Resource and ContainerResource specs.
type resourceSource struct {
	name      corev1.ResourceName
	container string
	target    autoscalingv2.MetricTarget
}

func resourceOf(spec autoscalingv2.MetricSpec) resourceSource {
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		r := spec.ContainerResource
		return resourceSource{name: r.Name, container: r.Container, target: r.Target}
	}
	return resourceSource{name: spec.Resource.Name, target: spec.Resource.Target}
}

func (p *pass) resourceMetric(ctx context.Context, in metricInputs, spec autoscalingv2.MetricSpec, kind decision.Kind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := resourceOf(spec)
	samples, at, err := p.c.deps.Metrics.PodResources(ctx, in.namespace, in.selector, src.name, src.container)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, p.fetchFailed(in, spec, err)
	}
	var r replicas.Result
	current := autoscalingv2.MetricValueStatus{}
	if kind == decision.ResourceUtilization || kind == decision.ContainerResourceUtilization {
		r, err = replicas.ResourceUtilization(replicas.UtilizationInput{
			CurrentReplicas: in.specReplicas, TargetUtilization: *src.target.AverageUtilization,
			Resource: src.name, Container: src.container, Tolerances: in.tolerances,
			Pods: in.pods, Samples: samples, Timing: in.timing, Timestamp: at,
		})
		utilization := r.Utilization
		current.AverageUtilization = &utilization
	} else {
		r, err = replicas.PodAverage(replicas.AverageInput{
			CurrentReplicas: in.specReplicas, TargetAverage: src.target.AverageValue.MilliValue(),
			Resource: src.name, Tolerances: in.tolerances,
			Pods: in.pods, Samples: samples, Timing: in.timing, Timestamp: at,
		})
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	current.AverageValue = usageQuantity(src.name, r.Value)
	status := autoscalingv2.MetricStatus{Type: spec.Type}
	if spec.Type == autoscalingv2.ContainerResourceMetricSourceType {
		status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: src.name, Container: src.container, Current: current}
	} else {
		status.Resource = &autoscalingv2.ResourceMetricStatus{Name: src.name, Current: current}
	}
	return r, status, nil
}

func (p *pass) podsMetric(ctx context.Context, in metricInputs, spec autoscalingv2.MetricSpec) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := spec.Pods
	sel, err := metricSelector(src.Metric.Selector)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	samples, at, err := p.c.deps.Metrics.PodMetric(ctx, in.namespace, src.Metric.Name, in.selector, sel)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, p.fetchFailed(in, spec, err)
	}
	r, err := replicas.PodAverage(replicas.AverageInput{
		CurrentReplicas: in.specReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
		Tolerances: in.tolerances, Pods: in.pods, Samples: samples, Timing: in.timing, Timestamp: at,
	})
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return r, autoscalingv2.MetricStatus{Type: spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
		Metric:  autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
		Current: autoscalingv2.MetricValueStatus{AverageValue: milli(r.Value)},
	}}, nil
}

func (p *pass) objectMetric(ctx context.Context, in metricInputs, spec autoscalingv2.MetricSpec, kind decision.Kind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := spec.Object
	sel, err := metricSelector(src.Metric.Selector)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	value, at, err := p.c.deps.Metrics.ObjectMetric(ctx, in.namespace, src.Metric.Name, src.DescribedObject, sel)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, p.fetchFailed(in, spec, err)
	}
	status := &autoscalingv2.ObjectMetricStatus{
		DescribedObject: src.DescribedObject,
		Metric:          autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
	}
	var r replicas.Result
	if kind == decision.ObjectValue {
		r, err = replicas.ObjectValue(value, replicas.ValueInput{
			CurrentReplicas: in.specReplicas, Target: src.Target.Value.MilliValue(),
			Tolerances: in.tolerances, Pods: in.pods, Timestamp: at,
		})
		status.Current.Value = milli(r.Value)
	} else {
		r, err = replicas.ObjectAverageValue(value, replicas.PerPodInput{
			StatusReplicas: in.statusReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Tolerances: in.tolerances, Timestamp: at,
		})
		status.Current.AverageValue = milli(r.Value)
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return r, autoscalingv2.MetricStatus{Type: spec.Type, Object: status}, nil
}

func (p *pass) externalMetric(ctx context.Context, in metricInputs, spec autoscalingv2.MetricSpec, kind decision.Kind) (replicas.Result, autoscalingv2.MetricStatus, error) {
	src := spec.External
	sel, err := metricSelector(src.Metric.Selector)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	values, at, err := p.c.deps.Metrics.ExternalMetric(ctx, in.namespace, src.Metric.Name, sel)
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, p.fetchFailed(in, spec, err)
	}
	status := &autoscalingv2.ExternalMetricStatus{
		Metric: autoscalingv2.MetricIdentifier{Name: src.Metric.Name, Selector: src.Metric.Selector},
	}
	var r replicas.Result
	if kind == decision.ExternalValue {
		r, err = replicas.ExternalValue(values, replicas.ValueInput{
			CurrentReplicas: in.specReplicas, Target: src.Target.Value.MilliValue(),
			Tolerances: in.tolerances, Pods: in.pods, Timestamp: at,
		})
		status.Current.Value = milli(r.Value)
	} else {
		r, err = replicas.ExternalAverageValue(values, replicas.PerPodInput{
			StatusReplicas: in.statusReplicas, TargetAverage: src.Target.AverageValue.MilliValue(),
			Tolerances: in.tolerances, Timestamp: at,
		})
		status.Current.AverageValue = milli(r.Value)
	}
	if err != nil {
		return replicas.Result{}, autoscalingv2.MetricStatus{}, err
	}
	return r, autoscalingv2.MetricStatus{Type: spec.Type, External: status}, nil
}
