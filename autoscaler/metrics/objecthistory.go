package metrics

import (
	"context"
	"errors"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	cmscheme "k8s.io/metrics/pkg/client/custom_metrics/scheme"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// ObjectHistoryReader reads the history of one object's custom metric
// through custom.metrics.k8s.io (docs/forecast.md#history-contract).
type ObjectHistoryReader interface {
	// ObjectHistory reads the history of metric of the object ref in
	// namespace (a Namespace ref reads the namespace itself, as
	// Client.ObjectMetric does): the object's values summed per timestamp
	// on a regular grid, NaN where nothing was recorded.
	ObjectHistory(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, selector labels.Selector, req HistoryRequest) (forecast.Series, error)
}

var (
	_ ObjectHistoryReader = (*REST)(nil)
	_ ObjectHistoryReader = (*Deduplicated)(nil)
)

// errNoObjectHistories is ObjectHistory on a REST built without
// WithObjectHistories.
var errNoObjectHistories = errors.New("the metrics client has no custom metrics REST client for histories")

// NewObjectHistoryClient returns a REST client of custom.metrics.k8s.io
// v1beta2 for ObjectHistory. k8s.io/metrics' custom metrics client cannot
// be used: its single-object read refuses an answer of several values.
func NewObjectHistoryClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/apis"
	c.GroupVersion = &cmv1beta2.SchemeGroupVersion
	c.NegotiatedSerializer = cmscheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// WithObjectHistories lets c read object histories through client (a REST
// client of custom.metrics.k8s.io v1beta2, NewObjectHistoryClient), mapping
// kinds to resources with mapper. It returns c.
func (c *REST) WithObjectHistories(client rest.Interface, mapper meta.RESTMapper) *REST {
	c.objectHistories, c.mapper = client, mapper
	return c
}

// ObjectHistory implements ObjectHistoryReader: GET
// /apis/custom.metrics.k8s.io/v1beta2/namespaces/NS/RESOURCE/NAME/METRIC with
// the metric selector and the reserved requirements.
func (c *REST) ObjectHistory(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	if c.objectHistories == nil || c.mapper == nil {
		return forecast.Series{}, errNoObjectHistories
	}
	sel, err := HistorySelector(selector, req)
	if err != nil {
		return forecast.Series{}, err
	}
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	r := c.objectHistories.Get().Namespace(namespace)
	if gk.Kind == "Namespace" && gk.Group == "" {
		// A reference may not leave its namespace: read the namespace itself.
		r = r.Resource("metrics").Name(metric)
	} else {
		mapping, err := c.mapper.RESTMapping(gk)
		if err != nil {
			return forecast.Series{}, fmt.Errorf("unable to map kind %s to a resource: %w", gk, err)
		}
		r = r.Resource(mapping.Resource.GroupResource().String()).Name(ref.Name).SubResource(metric)
	}
	var list cmv1beta2.MetricValueList
	if err := r.Param("metricLabelSelector", sel.String()).Do(ctx).Into(&list); err != nil {
		return forecast.Series{}, fmt.Errorf("unable to fetch the history from custom metrics API: %w", err)
	}
	pts := make([]point, 0, len(list.Items))
	for _, m := range list.Items {
		pts = append(pts, point{at: m.Timestamp.Time, milli: m.Value.MilliValue()})
	}
	return grid(pts, req.Step)
}

// ObjectHistory implements ObjectHistoryReader: histories are not shared
// (the controller caches them), so the call goes to the wrapped client.
func (d *Deduplicated) ObjectHistory(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	h, ok := d.next.(ObjectHistoryReader)
	if !ok {
		return forecast.Series{}, fmt.Errorf("metrics client %T cannot read object histories", d.next)
	}
	return h.ObjectHistory(ctx, namespace, metric, ref, selector, req)
}
