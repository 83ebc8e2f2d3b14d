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
	info, target, err := p.customTarget(ctx, info)
	if err != nil {
		return nil, err
	}
	q, err := target.Rule.CustomQuery(rules.CustomRequest{
		Series: target.Series, Namespace: name.Namespace, Resource: info.GroupResource,
		Names: []string{name.Name}, MetricSelector: metricSelector,
	})
	if err != nil {
		return nil, queryError(ctx, err)
	}
	vec, err := p.query(ctx, target.Rule, q)
	if err != nil {
		return nil, err
	}
	label, err := target.Rule.LabelForResource(info.GroupResource)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	sample, ok := vec.byLabel(label, p.dropNaN(target.Rule))[name.Name]
	if !ok {
		return nil, provider.NewMetricNotFoundForError(info.GroupResource, info.Metric, name.Name)
	}
	return p.metricValue(name, info, metricSelector, sample)
}

// GetMetricBySelector implements provider.CustomMetricsProvider. Object names come
// from the informer cache. Above the namespace-query threshold, and only when the
// rule's query groups by the resource label, Prometheus is asked for the whole
// namespace and the answer is filtered to the names: the same samples, with a query
// whose size does not depend on the number of objects.
func (p *Provider) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (_ *custom_metrics.MetricValueList, err error) {
	start := time.Now()
	defer func() { p.observe(apiCustom, start, err) }()
	info, target, err := p.customTarget(ctx, info)
	if err != nil {
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
	req := rules.CustomRequest{
		Series: target.Series, Namespace: namespace, Resource: info.GroupResource,
		Names: names, MetricSelector: metricSelector,
	}
	if p.useNamespaceQuery(target, len(names)) {
		req.Names = nil
	}
	q, err := target.Rule.CustomQuery(req)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	vec, err := p.query(ctx, target.Rule, q)
	if err != nil {
		return nil, err
	}
	label, err := target.Rule.LabelForResource(info.GroupResource)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	byName := vec.byLabel(label, p.dropNaN(target.Rule))
	items := make([]custom_metrics.MetricValue, 0, len(names))
	var proto *custom_metrics.MetricValue // kind, API version and metric are the same for every item
	for _, n := range names {
		sample, ok := byName[n]
		if !ok {
			continue
		}
		if proto == nil {
			if proto, err = p.metricValue(types.NamespacedName{Namespace: namespace, Name: n}, info, metricSelector, sample); err != nil {
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

func (p *Provider) useNamespaceQuery(target discovery.Target, n int) bool {
	return p.opts.NamespaceQueryThreshold > 0 && n > p.opts.NamespaceQueryThreshold && target.Rule.GroupsByResource()
}

// customTarget normalises info and finds its target, discovering it on demand when it
// is not registered yet.
func (p *Provider) customTarget(ctx context.Context, info provider.CustomMetricInfo) (provider.CustomMetricInfo, discovery.Target, error) {
	if rules.CheckMetricName(info.Metric) != nil {
		return info, discovery.Target{}, impossibleMetric(info.GroupResource, info.Metric)
	}
	normalized, _, err := info.Normalized(p.opts.Mapper)
	if err != nil {
		return info, discovery.Target{}, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	if t, ok := p.opts.Registry.Registry().Custom(normalized); ok {
		return normalized, t, nil
	}
	if p.opts.Registry.DiscoverCustom(ctx, normalized) {
		if t, ok := p.opts.Registry.Registry().Custom(normalized); ok {
			return normalized, t, nil
		}
	}
	return normalized, discovery.Target{}, provider.NewMetricNotFoundError(normalized.GroupResource, normalized.Metric)
}

// metricValue builds one API value from a sample.
func (p *Provider) metricValue(name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector, s sampleValue) (*custom_metrics.MetricValue, error) {
	ref, err := helpers.ReferenceFor(p.opts.Mapper, name, info)
	if err != nil {
		return nil, apierrors.NewInternalError(errInternal)
	}
	id, err := metricIdentifier(info.Metric, metricSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return &custom_metrics.MetricValue{
		DescribedObject: ref,
		Metric:          id,
		Timestamp:       s.timestamp,
		Value:           s.quantity(),
	}, nil
}
