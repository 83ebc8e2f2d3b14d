package resourcemetrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/metrics"
)

// podStorage serves podmetrics (the resource "pods" of metrics.k8s.io): the pods
// of the pod metadata cache with the getter's values. Read only, namespaced.
type podStorage struct {
	getter  MetricsGetter
	pods    cache.GenericLister // *metav1.PartialObjectMetadata
	logger  klog.Logger
	timeout time.Duration
}

var (
	_ rest.Storage              = (*podStorage)(nil)
	_ rest.KindProvider         = (*podStorage)(nil)
	_ rest.Getter               = (*podStorage)(nil)
	_ rest.Lister               = (*podStorage)(nil)
	_ rest.TableConvertor       = (*podStorage)(nil)
	_ rest.Scoper               = (*podStorage)(nil)
	_ rest.SingularNameProvider = (*podStorage)(nil)
)

// New implements rest.Storage.
func (s *podStorage) New() runtime.Object { return &metrics.PodMetrics{} }

// Destroy implements rest.Storage; the storage holds nothing to release.
func (s *podStorage) Destroy() {}

// Kind implements rest.KindProvider.
func (s *podStorage) Kind() string { return "PodMetrics" }

// NewList implements rest.Lister.
func (s *podStorage) NewList() runtime.Object { return &metrics.PodMetricsList{} }

// NamespaceScoped implements rest.Scoper.
func (s *podStorage) NamespaceScoped() bool { return true }

// GetSingularName implements rest.SingularNameProvider: none, as
// metrics-server's discovery has it.
func (s *podStorage) GetSingularName() string { return "" }

// List implements rest.Lister: the metrics of the pods of the request's
// namespace (all for a request across namespaces) that match the label and
// field selectors and have values, by namespace and name.
func (s *podStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	objs, err := s.pods.ByNamespace(namespace).List(labelSelector(opts))
	if err != nil {
		s.logger.Error(err, "Listing pods failed", "namespace", namespace)
		return nil, apierrors.NewInternalError(fmt.Errorf("failed listing pods: %w", err))
	}
	pods, err := podMeta(objs, fieldSelector(opts))
	if err != nil {
		return nil, err
	}
	items, err := s.metrics(ctx, pods)
	if err != nil {
		s.logger.Error(err, "Reading pod metrics failed", "namespace", namespace, "pods", len(pods))
		return nil, readError(err, "pods metrics")
	}
	return &metrics.PodMetricsList{Items: items}, nil
}

// Get implements rest.Getter: the metrics of one pod of the request's
// namespace; NotFound for a pod the cache does not hold or without values.
func (s *podStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	namespace := genericapirequest.NamespaceValue(ctx)
	obj, err := s.pods.ByNamespace(namespace).Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		s.logger.Error(err, "Getting pod failed", "pod", klog.KRef(namespace, name))
		return nil, apierrors.NewInternalError(fmt.Errorf("failed getting pod: %w", err))
	}
	pods, err := podMeta([]runtime.Object{obj}, nil)
	if err != nil {
		return nil, err
	}
	items, err := s.metrics(ctx, pods)
	if err != nil {
		s.logger.Error(err, "Reading pod metrics failed", "pod", klog.KRef(namespace, name))
		return nil, readError(err, "pod metrics")
	}
	if len(items) == 0 {
		return nil, apierrors.NewNotFound(metrics.Resource("podmetrics"), namespace+"/"+name)
	}
	return &items[0], nil
}

// metrics asks the getter for pods' values under the request's bounds and
// sorts them by namespace and name.
func (s *podStorage) metrics(ctx context.Context, pods []*metav1.PartialObjectMetadata) ([]metrics.PodMetrics, error) {
	ctx, cancel := requestContext(ctx, s.logger, s.timeout)
	defer cancel()
	items, err := s.getter.PodMetrics(ctx, pods)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, func(a, b metrics.PodMetrics) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return items, nil
}

// podMeta returns the pod metadata objects that match sel (nil: all). The
// cache holds *metav1.PartialObjectMetadata only; anything else is a 500
// naming the type.
func podMeta(objs []runtime.Object, sel fields.Selector) ([]*metav1.PartialObjectMetadata, error) {
	out := make([]*metav1.PartialObjectMetadata, 0, len(objs))
	for _, obj := range objs {
		pod, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return nil, apierrors.NewInternalError(fmt.Errorf("pod cache holds %T, want *v1.PartialObjectMetadata", obj))
		}
		if sel != nil && !sel.Matches(objectFields(&pod.ObjectMeta, true)) {
			continue
		}
		out = append(out, pod)
	}
	return out, nil
}

// ConvertToTable implements rest.TableConvertor: NAME, one column per resource
// (summed over the containers) and WINDOW.
func (s *podStorage) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	switch o := object.(type) {
	case *metrics.PodMetrics:
		return podTable([]metrics.PodMetrics{*o}, o.ResourceVersion, ""), nil
	case *metrics.PodMetricsList:
		return podTable(o.Items, o.ResourceVersion, o.Continue), nil
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("podmetrics table of %T", object))
	}
}
