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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"k8s.io/metrics/pkg/apis/external_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// externalHistory answers an external-metrics request carrying the reserved
// history requirements (rules.SplitHistory): the rule's query rendered with
// the rest of the selector, evaluated as the subquery (<query>)[range:step],
// one item per sample with its own timestamp. An answer of more than
// rules.MaxHistorySamples samples is refused (400): the selector is too
// broad for a history.
func (p *Provider) externalHistory(ctx context.Context, namespace string, sel labels.Selector, h rules.HistoryRequest, metric string, target discovery.Target) (*external_metrics.ExternalMetricValueList, error) {
	q, err := target.Rule.ExternalQuery(target.Series, namespace, sel)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	sq, err := h.Subquery(q)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	m, err := p.queryMatrix(ctx, target.Rule, sq)
	if err != nil {
		return nil, err
	}
	n, err := historySamples(metric, m)
	if err != nil {
		return nil, err
	}
	dropNaN := p.dropNaN(target.Rule)
	items := make([]external_metrics.ExternalMetricValue, 0, n)
	for _, s := range m {
		ls := make(map[string]string, len(s.Metric))
		for k, v := range s.Metric {
			if k != model.MetricNameLabel {
				ls[string(k)] = string(v)
			}
		}
		for _, pt := range s.Values {
			if !usable(pt.Value, dropNaN) {
				continue
			}
			sv := toSample(&model.Sample{Value: pt.Value})
			items = append(items, external_metrics.ExternalMetricValue{
				MetricName: metric, MetricLabels: ls,
				Timestamp: metav1.NewTime(pt.Timestamp.Time()), Value: sv.quantity(),
			})
		}
	}
	return &external_metrics.ExternalMetricValueList{Items: items}, nil
}

// queryMatrix sends a range-vector query to the backend of rule; failures
// are a generic 500 with detail logged, as for query.
func (p *Provider) queryMatrix(ctx context.Context, rule *rules.Rule, q string) (model.Matrix, error) {
	c, err := p.clients.For(rule.Backend())
	if err != nil {
		logError(ctx, err, "No client for the rule's backend")
		return nil, apierrors.NewInternalError(errInternal)
	}
	mq, ok := c.(prom.MatrixQuerier)
	if !ok {
		logError(ctx, fmt.Errorf("client %T cannot evaluate range-vector queries", c), "Reading a history failed")
		return nil, apierrors.NewInternalError(errInternal)
	}
	m, err := mq.QueryMatrix(ctx, q)
	if err != nil {
		logError(ctx, err, "Querying Prometheus for a history failed", "backend", backendLabel(rule.Backend()), "query", q)
		return nil, apierrors.NewInternalError(errInternal)
	}
	return m, nil
}

// historySamples counts the samples of a history's series, and refuses
// (400) more than rules.MaxHistorySamples: the selector is too broad or the
// step too short for a history.
func historySamples(metric string, m model.Matrix) (int, error) {
	n := 0
	for _, s := range m {
		n += len(s.Values)
	}
	if n > rules.MaxHistorySamples {
		return n, apierrors.NewBadRequest(fmt.Sprintf("history of %s: %d series with %d samples exceed %d; narrow the metric selector or lengthen %s",
			metric, len(m), n, rules.MaxHistorySamples, rules.HistoryStepLabel))
	}
	return n, nil
}

// errHistoryOneObject is why a custom-metrics request for several objects
// cannot carry the reserved history requirements.
const errHistoryOneObject = "%s and %s: a custom metric's history is served for one object asked by name " +
	"(/namespaces/NS/RESOURCE/NAME/METRIC), not for %s"

// errHistoryPods is how a Pods metric's history is asked for.
const errHistoryPods = "a Pods metric's history is asked for the pods of a namespace (/namespaces/NS/pods/*/METRIC) " +
	"with one of %s, %s or %s naming the workload"

// errHistoryPodsOnly is why a history of one object or an external metric
// cannot name a workload's pods.
const errHistoryPodsOnly = "%s: only a Pods metric's history (/namespaces/NS/pods/*/METRIC) names a workload's pods"

// refuseHistory is a 400 saying why when metricSelector asks for a history
// (or uses a reserved key) on a request that cannot answer one; nil otherwise.
func refuseHistory(metricSelector labels.Selector, what string) error {
	_, h, err := rules.SplitHistory(metricSelector)
	if err == nil && h == nil {
		return nil
	}
	msg := fmt.Sprintf(errHistoryOneObject, rules.HistoryRangeLabel, rules.HistoryStepLabel, what)
	if err == nil {
		msg += "; " + fmt.Sprintf(errHistoryPods, rules.HistoryDeploymentPodsLabel, rules.HistoryStatefulSetPodsLabel, rules.HistoryReplicaSetPodsLabel)
	}
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return apierrors.NewBadRequest(msg)
}

// ObjectHistory answers a custom-metrics request for the one object name
// carrying the reserved history requirements (docs/forecast.md#history-contract):
// the rule's query rendered for that object with the rest of the metric
// selector, evaluated as the subquery (<query>)[range:step], one item per
// sample with its own timestamp. Validation and bounds are the external
// history's: a bad reserved requirement or an answer of more than
// rules.MaxHistorySamples samples is a 400, a failing Prometheus a generic
// 500, an object without samples a 404.
func (p *Provider) ObjectHistory(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValueList, err error) {
	start := time.Now()
	defer func() { p.observe(apiCustom, start, err) }()
	info, target, err := p.opts.Discovery.LookupCustom(ctx, info)
	if err != nil {
		return nil, err
	}
	rest, h, err := rules.SplitHistory(metricSelector)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	if h == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("a history needs both %s and %s", rules.HistoryRangeLabel, rules.HistoryStepLabel))
	}
	if !h.Pods.IsZero() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf(errHistoryPodsOnly, h.Pods.Shape))
	}
	sel, q, err := customQuery(ctx, target, info, name.Namespace, []string{name.Name}, rest)
	if err != nil {
		return nil, err
	}
	sq, err := h.Subquery(q.PromQL)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	m, err := p.queryMatrix(ctx, target.Rule, sq)
	if err != nil {
		return nil, err
	}
	// Only the series of the object asked (as GetMetricByName keeps only its
	// sample); a query returning several series for it gives them all.
	mine := m[:0:0]
	for _, s := range m {
		if string(s.Metric[model.LabelName(q.Label)]) == name.Name {
			mine = append(mine, s)
		}
	}
	n, err := historySamples(info.Metric, mine)
	if err != nil {
		return nil, err
	}
	dropNaN := p.dropNaN(target.Rule)
	items := make([]custom_metrics.MetricValue, 0, n)
	var proto *custom_metrics.MetricValue
	for _, s := range mine {
		for _, pt := range s.Values {
			if !usable(pt.Value, dropNaN) {
				continue
			}
			sv := toSample(&model.Sample{Value: pt.Value, Timestamp: pt.Timestamp})
			if proto == nil {
				if proto, err = p.metricValue(name, info, sel, sv); err != nil {
					return nil, err
				}
			}
			v := *proto
			v.Timestamp = metav1.NewTime(pt.Timestamp.Time())
			v.Value = sv.quantity()
			items = append(items, v)
		}
	}
	if len(items) == 0 {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	return &custom_metrics.MetricValueList{Items: items}, nil
}

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
// history requirements and names a workload (rules.HistoryRequest.Pods;
// docs/forecast.md#history-contract): the workload's total over the pods
// its names select, past pods included, one item per point of
// (sum(<query>))[range:step], describing the workload. The pods' label
// selector is not used: past pods are gone, and Prometheus' series carry
// pod names. Validation and bounds are the other histories': a bad reserved
// requirement is a 400, a failing Prometheus a generic 500, a history
// without samples a 404.
func (p *Provider) podsHistory(ctx context.Context, namespace string, info provider.CustomMetricInfo, target discovery.Target, rest labels.Selector, h rules.HistoryRequest) (*custom_metrics.MetricValueList, error) {
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
