package provider

import (
	"context"
	"fmt"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/metrics/pkg/apis/external_metrics"

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
func (p *Provider) externalHistory(ctx context.Context, namespace string, sel labels.Selector, h rules.History, metric string, target discovery.Target) (*external_metrics.ExternalMetricValueList, error) {
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
