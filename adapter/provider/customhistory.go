package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

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
