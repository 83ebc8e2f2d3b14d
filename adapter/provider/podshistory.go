package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// podsGR is the resource of a Pods metric.
var podsGR = schema.GroupResource{Resource: "pods"}

// PodsHistory answers a custom-metrics request for the pods of namespace
// (/namespaces/NS/pods/*/METRIC) whose metric selector asks for a history
// (rules.AsksHistory): the workload's history (podsHistory). A selector
// naming no workload, or a bad reserved requirement, is a 400 saying why.
func (p *Provider) PodsHistory(ctx context.Context, namespace string, info provider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValueList, err error) {
	start := time.Now()
	defer func() { p.observe(apiCustom, start, err) }()
	rest, h, splitErr := rules.SplitHistory(metricSelector)
	info, target, err := p.opts.Discovery.LookupCustom(ctx, info)
	if err != nil {
		return nil, err
	}
	if splitErr != nil || h == nil || h.Pods.IsZero() || info.GroupResource != podsGR || namespace == "" {
		if err := refuseHistory(metricSelector, "a list of objects (* or a label selector)"); err != nil {
			return nil, err
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf(errHistoryPods, rules.HistoryDeploymentPodsLabel, rules.HistoryStatefulSetPodsLabel, rules.HistoryReplicaSetPodsLabel))
	}
	return p.podsHistory(ctx, namespace, info, target, rest, *h)
}

// podsHistory answers a custom-metrics request for the pods of namespace
// (/namespaces/NS/pods/*/METRIC) whose metric selector carries the reserved
// history requirements and names a workload (rules.History.Pods;
// docs/forecast.md#history-contract): the workload's total over the pods
// its names select, past pods included, one item per point of
// (sum(<query>))[range:step], describing the workload. The pods' label
// selector is not used: past pods are gone, and Prometheus' series carry
// pod names. Validation and bounds are the other histories': a bad reserved
// requirement is a 400, a failing Prometheus a generic 500, a history
// without samples a 404.
func (p *Provider) podsHistory(ctx context.Context, namespace string, info provider.CustomMetricInfo, target discovery.Target, rest labels.Selector, h rules.History) (*custom_metrics.MetricValueList, error) {
	sel, err := rules.ParseSelector(rest)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	sq, err := target.Rule.PodsHistoryQuery(rules.CustomRequest{
		Series: target.Series, Namespace: namespace, Resource: info.GroupResource, MetricSelector: sel,
	}, h)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	m, err := p.queryMatrix(ctx, target.Rule, sq)
	if err != nil {
		return nil, err
	}
	n, err := historySamples(info.Metric, m) // one series (a sum): within the bound from a sane backend
	if err != nil {
		return nil, err
	}
	ls, err := sel.LabelSelector()
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	ref := custom_metrics.ObjectReference{Kind: h.Pods.Kind(), APIVersion: "apps/v1", Namespace: namespace, Name: h.Pods.Name}
	dropNaN := p.dropNaN(target.Rule)
	items := make([]custom_metrics.MetricValue, 0, n)
	for _, s := range m {
		for _, pt := range s.Values {
			if !usable(pt.Value, dropNaN) {
				continue
			}
			sv := toSample(&model.Sample{Value: pt.Value})
			items = append(items, custom_metrics.MetricValue{
				DescribedObject: ref,
				Metric:          custom_metrics.MetricIdentifier{Name: info.Metric, Selector: ls},
				Timestamp:       metav1.NewTime(pt.Timestamp.Time()),
				Value:           sv.quantity(),
			})
		}
	}
	if len(items) == 0 {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, h.Pods.Name)
	}
	return &custom_metrics.MetricValueList{Items: items}, nil
}
