package metrics

import (
	"context"
	"errors"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Errors returned when an API answers with an empty list, worded as upstream's
// metrics client. Callers may match them with errors.Is.
var (
	ErrNoResourceMetrics = errors.New("no metrics returned from resource metrics API")
	ErrNoCustomMetrics   = errors.New("no metrics returned from custom metrics API")
	// ErrNoExternalMetrics is replicas.ErrNoExternalMetrics.
	ErrNoExternalMetrics = replicas.ErrNoExternalMetrics
)

// Client reads metric values for autoscalers. Values are milli-units.
//
// Results may be shared between callers (see NewDeduplicated): callers must
// treat returned maps and slices as read-only. Implementations are safe for
// concurrent use. The timestamp returned next to a list is the first item's,
// as upstream reports it; it is informational.
type Client interface {
	// PodResources returns the usage of resource per pod among the pods
	// matching selector in namespace, from metrics.k8s.io PodMetrics. With
	// container == "" a pod's value is the sum over its containers and a pod
	// with any container lacking the resource is left out; otherwise it is
	// that container's usage and pods without it are left out. Each sample
	// carries the PodMetrics timestamp and window. An empty answer is
	// ErrNoResourceMetrics.
	PodResources(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName, container string) (replicas.Samples, time.Time, error)

	// PodMetric returns metric for each pod matching selector in namespace,
	// from custom.metrics.k8s.io, filtered by metricSelector. Samples without
	// a window get upstream's default of one minute. An empty answer is
	// ErrNoCustomMetrics.
	PodMetric(ctx context.Context, namespace, metric string, selector, metricSelector labels.Selector) (replicas.Samples, time.Time, error)

	// ObjectMetric returns metric of the object ref in namespace from
	// custom.metrics.k8s.io (a Namespace ref reads the namespace itself).
	ObjectMetric(ctx context.Context, namespace, metric string, ref autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)

	// ExternalMetric returns every series' value of metric in namespace
	// matching selector, from external.metrics.k8s.io. An empty answer is
	// ErrNoExternalMetrics.
	ExternalMetric(ctx context.Context, namespace, metric string, selector labels.Selector) ([]int64, time.Time, error)
}
