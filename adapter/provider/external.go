package provider

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/metrics/pkg/apis/external_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

const apiExternal = "external.metrics.k8s.io"

// GetExternalMetric implements provider.ExternalMetricsProvider. Every sample of the
// answer becomes one item carrying all its labels and its own timestamp.
func (p *Provider) GetExternalMetric(ctx context.Context, namespace string, metricSelector labels.Selector, info provider.ExternalMetricInfo) (_ *external_metrics.ExternalMetricValueList, err error) {
	start := time.Now()
	defer func() { p.observe(apiExternal, start, err) }()
	target, err := p.opts.Discovery.LookupExternal(ctx, info.Metric)
	if err != nil {
		return nil, err
	}
	if rest, h, err := rules.SplitHistory(metricSelector); err != nil || h != nil { // docs/forecast.md#history-contract
		if err != nil {
			return nil, queryError(ctx, err)
		}
		if !h.Pods.IsZero() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf(errHistoryPodsOnly, h.Pods.Shape))
		}
		return p.externalHistory(ctx, namespace, rest, *h, info.Metric, target)
	}
	q, err := target.Rule.ExternalQuery(target.Series, namespace, metricSelector)
	if err != nil {
		return nil, queryError(ctx, err)
	}
	vec, err := p.query(ctx, target.Rule, q)
	if err != nil {
		return nil, err
	}
	items := make([]external_metrics.ExternalMetricValue, 0, len(vec))
	for _, s := range vec.samples(p.dropNaN(target.Rule)) {
		items = append(items, external_metrics.ExternalMetricValue{
			MetricName:   info.Metric,
			MetricLabels: s.labels,
			Timestamp:    s.timestamp,
			Value:        s.quantity(),
		})
	}
	return &external_metrics.ExternalMetricValueList{Items: items}, nil
}
