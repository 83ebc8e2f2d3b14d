package resourcemetrics

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/metrics"
)

// nodeStorage serves nodemetrics (the resource "nodes" of metrics.k8s.io): the
// nodes of the node cache with the getter's values. Read only, cluster scoped.
type nodeStorage struct {
	getter  MetricsGetter
	nodes   corev1listers.NodeLister
	logger  klog.Logger
	timeout time.Duration
}

var (
	_ rest.Storage              = (*nodeStorage)(nil)
	_ rest.KindProvider         = (*nodeStorage)(nil)
	_ rest.Getter               = (*nodeStorage)(nil)
	_ rest.Lister               = (*nodeStorage)(nil)
	_ rest.TableConvertor       = (*nodeStorage)(nil)
	_ rest.Scoper               = (*nodeStorage)(nil)
	_ rest.SingularNameProvider = (*nodeStorage)(nil)
)

// New implements rest.Storage.
func (s *nodeStorage) New() runtime.Object { return &metrics.NodeMetrics{} }

// Destroy implements rest.Storage; the storage holds nothing to release.
func (s *nodeStorage) Destroy() {}

// Kind implements rest.KindProvider.
func (s *nodeStorage) Kind() string { return "NodeMetrics" }

// NewList implements rest.Lister.
func (s *nodeStorage) NewList() runtime.Object { return &metrics.NodeMetricsList{} }

// NamespaceScoped implements rest.Scoper.
func (s *nodeStorage) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider: none, as
// metrics-server's discovery has it.
func (s *nodeStorage) GetSingularName() string { return "" }

// List implements rest.Lister: the metrics of the nodes that match the label
// and field selectors and have values, by name.
func (s *nodeStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	nodes, err := s.nodes.List(labelSelector(opts))
	if err != nil {
		s.logger.Error(err, "Listing nodes failed")
		return nil, apierrors.NewInternalError(fmt.Errorf("failed listing nodes: %w", err))
	}
	if sel := fieldSelector(opts); sel != nil {
		nodes = slices.DeleteFunc(nodes, func(n *corev1.Node) bool {
			return !sel.Matches(objectFields(&n.ObjectMeta, false))
		})
	}
	items, err := s.metrics(ctx, nodes)
	if err != nil {
		s.logger.Error(err, "Reading node metrics failed", "nodes", len(nodes))
		return nil, readError(err, "nodes metrics")
	}
	return &metrics.NodeMetricsList{Items: items}, nil
}

// Get implements rest.Getter: the metrics of one node; NotFound for a node
// the cache does not hold or without values.
func (s *nodeStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	node, err := s.nodes.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, err
		}
		s.logger.Error(err, "Getting node failed", "node", klog.KRef("", name))
		return nil, apierrors.NewInternalError(fmt.Errorf("failed getting node: %w", err))
	}
	items, err := s.metrics(ctx, []*corev1.Node{node})
	if err != nil {
		s.logger.Error(err, "Reading node metrics failed", "node", klog.KRef("", name))
		return nil, readError(err, "node metrics")
	}
	if len(items) == 0 {
		return nil, apierrors.NewNotFound(metrics.Resource("nodemetrics"), name)
	}
	return &items[0], nil
}

// metrics asks the getter for nodes' values under the request's bounds and
// sorts them by name.
func (s *nodeStorage) metrics(ctx context.Context, nodes []*corev1.Node) ([]metrics.NodeMetrics, error) {
	ctx, cancel := requestContext(ctx, s.logger, s.timeout)
	defer cancel()
	items, err := s.getter.NodeMetrics(ctx, nodes)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(items, func(a, b metrics.NodeMetrics) int { return strings.Compare(a.Name, b.Name) })
	return items, nil
}

// ConvertToTable implements rest.TableConvertor: NAME, one column per resource
// and WINDOW.
func (s *nodeStorage) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	switch o := object.(type) {
	case *metrics.NodeMetrics:
		return nodeTable([]metrics.NodeMetrics{*o}, o.ResourceVersion, ""), nil
	case *metrics.NodeMetricsList:
		return nodeTable(o.Items, o.ResourceVersion, o.Continue), nil
	default:
		return nil, apierrors.NewInternalError(fmt.Errorf("nodemetrics table of %T", object))
	}
}
