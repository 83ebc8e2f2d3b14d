// Package resourcemetrics serves the metrics.k8s.io API group (PodMetrics and
// NodeMetrics, what kubectl top and the HPA's Resource and ContainerResource
// metrics read) at every version Kubernetes defines for it, v1 and v1beta1,
// from one REST storage: both versions give the same answers and differ only in
// apiVersion. The values come from a MetricsGetter; the objects asked about come
// from caches of pod metadata and nodes.
package resourcemetrics

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/metrics"
)

// MetricsGetter gives the resource usage of pods and nodes. The adapter's
// provider answers from Prometheus; a getter forwarding to another metrics
// server can stand in its place.
type MetricsGetter interface {
	// PodMetrics returns the metrics of those of pods that have any, in any
	// order, each with the pod's name and namespace. A pod left out is
	// answered NotFound on a get and missing from a list. It stops when ctx
	// ends. A returned error that is an API status error is passed to the
	// caller as it is (its code and message); any other error is a 500 with
	// its text.
	PodMetrics(ctx context.Context, pods []*metav1.PartialObjectMetadata) ([]metrics.PodMetrics, error)
	// NodeMetrics is PodMetrics for nodes.
	NodeMetrics(ctx context.Context, nodes []*corev1.Node) ([]metrics.NodeMetrics, error)
}
