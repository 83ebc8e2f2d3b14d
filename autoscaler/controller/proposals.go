package controller

import (
	"context"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// failurePrefix starts every ScalingActive=False message of a failed metric;
// the rest is what upstream's per-metric warning event says.
const failurePrefix = "the HPA was unable to compute the replica count: "

// metricInputs are the facts all metrics of one reconcile share.
type metricInputs struct {
	namespace      string
	specReplicas   int32
	statusReplicas int32
	selector       labels.Selector
	pods           []replicas.Pod
	tolerances     replicas.Tolerances
	timing         replicas.PodTiming
}

// proposals evaluates every metric of the spec, in order. Statuses has one
// entry per metric; a failed metric leaves a zero entry, as upstream does.
func (p *pass) proposals(ctx context.Context, in metricInputs) ([]decision.Proposal, []autoscalingv2.MetricStatus) {
	specs := p.obj.Spec.Metrics
	props := make([]decision.Proposal, len(specs))
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	for i, spec := range specs {
		prop, status, err := p.evaluate(ctx, in, spec)
		if err != nil {
			props[i] = decision.Failure(spec, err)
			p.warn(props[i].Condition.Reason, strings.TrimPrefix(props[i].Condition.Message, failurePrefix))
			continue
		}
		props[i], statuses[i] = prop, status
	}
	return props, statuses
}

// evaluate reads one metric and computes its proposal and status. Errors are
// the causes decision.Failure expects.
func (p *pass) evaluate(ctx context.Context, in metricInputs, spec autoscalingv2.MetricSpec) (decision.Proposal, autoscalingv2.MetricStatus, error) {
	kind, err := decision.Classify(spec)
	if err != nil {
		return decision.Proposal{}, autoscalingv2.MetricStatus{}, err
	}
	var r replicas.Result
	var status autoscalingv2.MetricStatus
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		r, status, err = p.resourceMetric(ctx, in, spec, kind)
	case autoscalingv2.PodsMetricSourceType:
		r, status, err = p.podsMetric(ctx, in, spec)
	case autoscalingv2.ObjectMetricSourceType:
		r, status, err = p.objectMetric(ctx, in, spec, kind)
	case autoscalingv2.ExternalMetricSourceType:
		r, status, err = p.externalMetric(ctx, in, spec, kind)
	}
	if err != nil {
		return decision.Proposal{}, autoscalingv2.MetricStatus{}, err
	}
	return decision.Success(spec, r.Replicas, r.Timestamp), status, nil
}

// fetchFailed counts a failed read and wraps err as upstream's calculator.
func (p *pass) fetchFailed(in metricInputs, spec autoscalingv2.MetricSpec, err error) error {
	p.c.deps.SelfMetrics.fetchError(string(spec.Type))
	return decision.FetchError(spec, in.namespace, err)
}

// milli is a DecimalSI quantity of v milli-units.
func milli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

// usageQuantity formats a resource usage as upstream reports it: memory in
// BinarySI (as metrics-server does), everything else in DecimalSI.
func usageQuantity(name corev1.ResourceName, v int64) *resource.Quantity {
	if name == corev1.ResourceMemory {
		return resource.NewMilliQuantity(v, resource.BinarySI)
	}
	return milli(v)
}

// metricSelector parses a metric's label selector.
func metricSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}
