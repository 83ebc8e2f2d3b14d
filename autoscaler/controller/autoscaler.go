package controller

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	clientv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/typed/autoscaling/v1alpha1"
	informersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions/autoscaling/v1alpha1"
	listersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/listers/autoscaling/v1alpha1"
)

// AutoscalerKind serves autoscaling.ebbflow.dev/v1alpha1 Autoscalers.
type AutoscalerKind struct {
	informer cache.SharedIndexInformer
	lister   listersv1alpha1.AutoscalerLister
	client   clientv1alpha1.AutoscalersGetter
}

var _ Kind = (*AutoscalerKind)(nil)

// NewAutoscalerKind returns the Autoscaler kind over a shared Autoscaler informer.
func NewAutoscalerKind(informer informersv1alpha1.AutoscalerInformer, client clientv1alpha1.AutoscalersGetter) *AutoscalerKind {
	return &AutoscalerKind{informer: informer.Informer(), lister: informer.Lister(), client: client}
}

// Name implements Kind.
func (b *AutoscalerKind) Name() string { return "Autoscaler" }

// Informer implements Kind.
func (b *AutoscalerKind) Informer() cache.SharedIndexInformer { return b.informer }

// Get implements Kind.
func (b *AutoscalerKind) Get(namespace, name string) (*Object, error) {
	shared, err := b.lister.Autoscalers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	a := shared.DeepCopy()
	by := ""
	if a.Status.LastDecision != nil {
		by = a.Status.LastDecision.EvaluatedBy
	}
	return &Object{
		Namespace:             a.Namespace,
		Name:                  a.Name,
		Generation:            a.Generation,
		ResourceVersion:       a.ResourceVersion,
		Spec:                  evaluation.FromAutoscaler(&a.Spec),
		Status:                v1alpha1.ToHPAStatus(&a.Status),
		ProportionalStatus:    proportionalStatusOf(a.Status.CurrentMetrics),
		LastDecisionSignature: evaluation.Signature(a.Status.LastDecision),
		LastDecisionBy:        by,
		ScaleEvents:           a.Status.ScaleEvents,
		ScaleEventsField:      "status.scaleEvents",
		Source:                a,
	}, nil
}

// Store implements Kind: Autoscalers keep the decision record and the
// scale events in their status, so one status write stores everything when
// anything changed (the record is then rebuilt even if its outcome did not
// change).
func (b *AutoscalerKind) Store(ctx context.Context, obj *Object, change Change) (Stored, error) {
	if !change.Status && !change.Record && !change.ScaleEvents {
		return nil, nil
	}
	a := obj.Source.(*v1alpha1.Autoscaler).DeepCopy()
	a.Status = v1alpha1.FromHPAStatus(&obj.Status)
	a.Status.CurrentMetrics = withProportional(a.Status.CurrentMetrics, obj.ProportionalStatus)
	rec := change.BuildRecord()
	a.Status.LastDecision = &rec
	a.Status.ScaleEvents = obj.ScaleEvents
	updated, err := b.client.Autoscalers(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		return nil, &StatusError{Name: obj.Name, Err: err}
	}
	return Stored{{"status", updated.ResourceVersion}}, nil
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
