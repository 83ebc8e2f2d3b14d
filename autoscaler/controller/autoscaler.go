package controller

import (
	"context"
	"errors"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	clientv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/typed/autoscaling/v1alpha1"
	informersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions/autoscaling/v1alpha1"
	listersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/listers/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/pipeline"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// AutoscalerBackend serves autoscaling.ebbflow.dev/v1alpha1 Autoscalers.
type AutoscalerBackend struct {
	informer cache.SharedIndexInformer
	lister   listersv1alpha1.AutoscalerLister
	client   clientv1alpha1.AutoscalersGetter
}

var _ Backend = (*AutoscalerBackend)(nil)

// NewAutoscalerBackend returns the backend over a shared Autoscaler informer.
func NewAutoscalerBackend(informer informersv1alpha1.AutoscalerInformer, client clientv1alpha1.AutoscalersGetter) *AutoscalerBackend {
	return &AutoscalerBackend{informer: informer.Informer(), lister: informer.Lister(), client: client}
}

// Kind implements Backend.
func (b *AutoscalerBackend) Kind() string { return "Autoscaler" }

// Informer implements Backend.
func (b *AutoscalerBackend) Informer() cache.SharedIndexInformer { return b.informer }

// Get implements Backend.
func (b *AutoscalerBackend) Get(namespace, name string) (*Object, error) {
	shared, err := b.lister.Autoscalers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	a := shared.DeepCopy()
	return &Object{
		Namespace:             a.Namespace,
		Name:                  a.Name,
		Generation:            a.Generation,
		ResourceVersion:       a.ResourceVersion,
		Spec:                  v1alpha1.ToHPASpec(&a.Spec),
		Status:                v1alpha1.ToHPAStatus(&a.Status),
		Extensions:            pipeline.Extensions(&a.Spec),
		MetricOptions:         pipeline.MetricOptionsOf(a.Spec.Metrics),
		Proportional:          proportionalOf(a.Spec.Metrics),
		ProportionalStatus:    proportionalStatusOf(a.Status.CurrentMetrics),
		LastDecision:          a.Status.LastDecision,
		LastDecisionSignature: record.Signature(a.Status.LastDecision),
		ScaleEvents:           a.Status.ScaleEvents,
		Source:                a,
	}, nil
}

// UpdateStatus implements Backend.
func (b *AutoscalerBackend) UpdateStatus(ctx context.Context, obj *Object) (string, error) {
	a := obj.Source.(*v1alpha1.Autoscaler).DeepCopy()
	a.Status = v1alpha1.FromHPAStatus(&obj.Status)
	a.Status.CurrentMetrics = withProportional(a.Status.CurrentMetrics, obj.ProportionalStatus)
	a.Status.LastDecision = obj.LastDecision.DeepCopy()
	a.Status.ScaleEvents = obj.ScaleEvents
	updated, err := b.client.Autoscalers(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	return updated.ResourceVersion, nil
}

// DecisionInStatus implements Backend: status.lastDecision.
func (b *AutoscalerBackend) DecisionInStatus() bool { return true }

// WriteAnnotations implements Backend; Autoscalers keep the record and the
// scale events in status.
func (b *AutoscalerBackend) WriteAnnotations(context.Context, *Object, *v1alpha1.DecisionRecord, bool) (string, error) {
	return "", errors.New("the decision record and scale events of an Autoscaler are written with its status")
}

// proportionalOf returns the ClusterProportional metrics with their index.
func proportionalOf(metrics []v1alpha1.MetricSpec) []ProportionalSource {
	var out []ProportionalSource
	for i, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType && m.ClusterProportional != nil {
			out = append(out, ProportionalSource{Index: i, Source: *m.ClusterProportional})
		}
	}
	return out
}

// proportionalStatusOf returns the ClusterProportional entries of
// currentMetrics by index.
func proportionalStatusOf(ms []v1alpha1.MetricStatus) map[int]v1alpha1.ClusterProportionalStatus {
	var out map[int]v1alpha1.ClusterProportionalStatus
	for i, m := range ms {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType && m.ClusterProportional != nil {
			if out == nil {
				out = map[int]v1alpha1.ClusterProportionalStatus{}
			}
			out[i] = *m.ClusterProportional
		}
	}
	return out
}

// withProportional inserts the ClusterProportional entries at their indices
// (spec order) among the HPA metrics' entries, which keep their order.
func withProportional(ms []v1alpha1.MetricStatus, prop map[int]v1alpha1.ClusterProportionalStatus) []v1alpha1.MetricStatus {
	if len(prop) == 0 {
		return ms
	}
	total := len(ms) + len(prop)
	out := make([]v1alpha1.MetricStatus, 0, total)
	next := 0
	for i := 0; len(out) < total; i++ {
		if s, ok := prop[i]; ok {
			out = append(out, v1alpha1.MetricStatus{
				MetricStatus:        autoscalingv2.MetricStatus{Type: v1alpha1.ClusterProportionalMetricSourceType},
				ClusterProportional: &s,
			})
		} else if next < len(ms) {
			out = append(out, ms[next])
			next++
		} else if i >= total+len(prop) {
			break // an index past the end: nothing left to place it after
		}
	}
	return out
}
