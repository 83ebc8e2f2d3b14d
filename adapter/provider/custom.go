package provider

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider/helpers"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const apiCustom = "custom.metrics.k8s.io"

// GetMetricByName implements provider.CustomMetricsProvider.
func (p *Provider) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValue, err error) {
	start := time.Now()
	defer func() { p.observe(apiCustom, start, err) }()
	info, target, err := p.opts.Discovery.LookupCustom(ctx, info)
	if err != nil {
		return nil, err
	}
	if err := refuseHistory(metricSelector, "a request answered with a single value (this server has no history handler installed)"); err != nil {
		return nil, err
	}
	sel, q, err := customQuery(ctx, target, info, name.Namespace, []string{name.Name}, metricSelector)
	if err != nil {
		return nil, err
	}
	vec, err := p.query(ctx, target.Rule, q.PromQL)
	if err != nil {
		return nil, err
	}
	sample, ok := vec.byLabel(q.Label, p.dropNaN(target.Rule))[name.Name]
	if !ok {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	return p.metricValue(name, info, sel, sample)
}

// GetMetricBySelector implements provider.CustomMetricsProvider. Object names come
// from the informer cache. Above the namespace-query threshold, and only when the
// rule's query groups by the resource label, Prometheus is asked for the whole
// namespace and the answer is filtered to the names: the same samples, with a query
// whose size does not depend on the number of objects.
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValueList, err error) {
	start := time.Now()
	defer func() { p.observe(apiCustom, start, err) }()
	info, target, err := p.opts.Discovery.LookupCustom(ctx, info)
	if err != nil {
		return nil, err
	}
	if rest, h, err := rules.SplitHistory(metricSelector); err == nil && h != nil && !h.Pods.IsZero() && info.GroupResource == podsGR && namespace != "" {
		return p.podsHistory(ctx, namespace, info, target, rest, *h)
	}
	if err := refuseHistory(metricSelector, "a list of objects (* or a label selector)"); err != nil {
		return nil, err
	}
	names, err := p.opts.Lister.Names(ctx, info.GroupResource, namespace, selector)
	if err != nil {
		logError(ctx, err, "Listing objects failed", "resource", info.GroupResource, "namespace", namespace)
		return nil, apierrors.NewInternalError(errInternal)
	}
	if len(names) == 0 {
		return nil, provider.NewMetricNotFoundForSelectorError(info.GroupResource, info.Metric, "*", selector)
	}
	queried := names
	if p.useNamespaceQuery(target, len(names)) {
		queried = nil
	}
	sel, q, err := customQuery(ctx, target, info, namespace, queried, metricSelector)
	if err != nil {
		return nil, err
	}
	vec, err := p.query(ctx, target.Rule, q.PromQL)
	if err != nil {
		return nil, err
	}
	byName := vec.byLabel(q.Label, p.dropNaN(target.Rule))
	items := make([]custom_metrics.MetricValue, 0, len(names))
	var proto *custom_metrics.MetricValue // kind, API version and metric are the same for every item
	for _, n := range names {
		sample, ok := byName[n]
		if !ok {
			continue
		}
		if proto == nil {
			if proto, err = p.metricValue(types.NamespacedName{Namespace: namespace, Name: n}, info, sel, sample); err != nil {
				return nil, err
			}
		}
		v := *proto
		v.DescribedObject.Name = n
		v.Timestamp = sample.timestamp
		v.Value = sample.quantity()
		items = append(items, v)
	}
	if len(items) == 0 {
		return nil, provider.NewMetricNotFoundForSelectorError(info.GroupResource, info.Metric, "*", selector)
	}
	return &custom_metrics.MetricValueList{Items: items}, nil
}

// customQuery parses metricSelector and renders target's query for the
// objects names of namespace (nil: the whole namespace); a bad selector is
// a 400.
func customQuery(ctx context.Context, target discovery.Target, info provider.CustomMetricInfo, namespace string, names []string, metricSelector labels.Selector) (*rules.Selector, rules.Query, error) {
	sel, err := rules.ParseSelector(metricSelector)
	if err != nil {
		return nil, rules.Query{}, queryError(ctx, err)
	}
	q, err := target.Rule.Custom(rules.CustomRequest{
		Series: target.Series, Namespace: namespace, Resource: info.GroupResource,
		Names: names, MetricSelector: sel,
	})
	if err != nil {
		return nil, rules.Query{}, queryError(ctx, err)
	}
	return sel, q, nil
}

func (p *Provider) useNamespaceQuery(target discovery.Target, n int) bool {
	return p.opts.NamespaceQueryThreshold > 0 && n > p.opts.NamespaceQueryThreshold && target.Rule.GroupsByResource()
}

// metricValue builds one API value from a sample.
func (p *Provider) metricValue(name types.NamespacedName, info provider.CustomMetricInfo, sel *rules.Selector, s sampleValue) (*custom_metrics.MetricValue, error) {
	ref, err := helpers.ReferenceFor(p.opts.Mapper, name, info)
	if err != nil {
		return nil, apierrors.NewInternalError(errInternal)
	}
	ls, err := sel.LabelSelector()
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return &custom_metrics.MetricValue{
		DescribedObject: ref,
		Metric:          custom_metrics.MetricIdentifier{Name: info.Metric, Selector: ls},
		Timestamp:       s.timestamp,
		Value:           s.quantity(),
	}, nil
}
