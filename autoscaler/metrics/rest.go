package metrics

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// defaultCustomMetricWindow is the window of a custom metric sample that does
// not state one, as upstream assumes.
const defaultCustomMetricWindow = time.Minute

// REST is a Client over the three metrics APIs.
type REST struct {
	resource resourceclient.PodMetricsesGetter
	custom   customclient.CustomMetricsClient
	external externalclient.ExternalMetricsClient
	// objectHistories and mapper read object histories (objecthistory.go);
	// nil until WithObjectHistories.
	objectHistories rest.Interface
	mapper          meta.RESTMapper
}

var _ Client = (*REST)(nil)

// NewREST returns a Client that reads resource metrics through resource,
// pod and object metrics through custom and external metrics through
// external. None may be nil.
func NewREST(resource resourceclient.PodMetricsesGetter, custom customclient.CustomMetricsClient, external externalclient.ExternalMetricsClient) *REST {
	return &REST{resource: resource, custom: custom, external: external}
}

// PodResources implements Client.
func (c *REST) PodResources(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (replicas.Samples, time.Time, error) {
	list, err := c.resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, ErrNoResourceMetrics
	}
	logger := klog.FromContext(ctx)
	out := make(replicas.Samples, len(list.Items))
	for i := range list.Items {
		m := &list.Items[i]
		v, ok := podUsage(m, resource, container)
		if !ok {
			logger.V(2).Info("Missing resource metric", "resource", resource, "container", container, "pod", klog.KObj(m))
			continue
		}
		out[m.Name] = replicas.Sample{Value: v, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// podUsage is one pod's usage of resource: one container's, or the sum over
// all containers (none may lack it, and a pod without containers has none).
func podUsage(m *metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) (int64, bool) {
	if container != "" {
		for _, c := range m.Containers {
			if c.Name == container {
				q, ok := c.Usage[resource]
				return q.MilliValue(), ok
			}
		}
		return 0, false
	}
	if len(m.Containers) == 0 {
		return 0, false
	}
	var sum int64
	for _, c := range m.Containers {
		q, ok := c.Usage[resource]
		if !ok {
			return 0, false
		}
		sum += q.MilliValue()
	}
	return sum, true
}

// PodMetric implements Client.
func (c *REST) PodMetric(ctx context.Context, namespace, metric string, selector, metricSelector labels.Selector) (replicas.Samples, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	list, err := c.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metric, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, ErrNoCustomMetrics
	}
	out := make(replicas.Samples, len(list.Items))
	for _, m := range list.Items {
		window := defaultCustomMetricWindow
		if m.WindowSeconds != nil {
			window = time.Duration(*m.WindowSeconds) * time.Second
		}
		out[m.DescribedObject.Name] = replicas.Sample{Value: m.Value.MilliValue(), Timestamp: m.Timestamp.Time, Window: window}
	}
	return out, list.Items[0].Timestamp.Time, nil
}

// ObjectMetric implements Client.
func (c *REST) ObjectMetric(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return 0, time.Time{}, err
	}
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	getter, name := c.custom.NamespacedMetrics(namespace), ref.Name
	if gk.Kind == "Namespace" && gk.Group == "" {
		// A reference may not leave its namespace: read the namespace itself.
		getter, name = c.custom.RootScopedMetrics(), namespace
	}
	v, err := getter.GetForObject(gk, name, metric, metricSelector)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return v.Value.MilliValue(), v.Timestamp.Time, nil
}

// ExternalMetric implements Client.
func (c *REST) ExternalMetric(ctx context.Context, namespace, metric string, selector labels.Selector) ([]int64, time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, time.Time{}, err
	}
	list, err := c.external.NamespacedMetrics(namespace).List(metric, selector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, ErrNoExternalMetrics
	}
	out := make([]int64, 0, len(list.Items))
	for _, m := range list.Items {
		out = append(out, m.Value.MilliValue())
	}
	return out, list.Items[0].Timestamp.Time, nil
}
