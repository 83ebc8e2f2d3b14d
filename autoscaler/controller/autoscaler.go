package controller

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	clientv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/typed/autoscaling/v1alpha1"
	informersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions/autoscaling/v1alpha1"
	listersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/listers/autoscaling/v1alpha1"
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
		Extensions:            extensionsOf(&a.Spec),
		MetricOptions:         metricOptionsOf(a.Spec.Metrics),
		Proportional:          proportionalOf(a.Spec.Metrics),
		LastDecision:          a.Status.LastDecision,
		LastDecisionSignature: record.Signature(a.Status.LastDecision),
		Source:                a,
	}, nil
}

// UpdateStatus implements Backend.
func (b *AutoscalerBackend) UpdateStatus(ctx context.Context, obj *Object) (string, error) {
	a := obj.Source.(*v1alpha1.Autoscaler).DeepCopy()
	a.Status = v1alpha1.FromHPAStatus(&obj.Status)
	a.Status.LastDecision = obj.LastDecision.DeepCopy()
	updated, err := b.client.Autoscalers(obj.Namespace).UpdateStatus(ctx, a, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	return updated.ResourceVersion, nil
}

// DecisionInStatus implements Backend: status.lastDecision.
func (b *AutoscalerBackend) DecisionInStatus() bool { return true }

// WriteDecision implements Backend; Autoscalers keep the record in status.
func (b *AutoscalerBackend) WriteDecision(context.Context, *Object, *v1alpha1.DecisionRecord) (string, error) {
	return "", errors.New("the decision record of an Autoscaler is written with its status")
}

// extensionsOf reads the extensions an Autoscaler's spec sets.
func extensionsOf(spec *v1alpha1.AutoscalerSpec) adjust.Spec {
	ext := adjust.Spec{Paused: spec.Paused, DryRun: spec.DryRun}
	if s := spec.ScaleToZero; s != nil {
		ext.ScaleToZero = &adjust.ScaleToZero{}
		if s.After != nil {
			ext.ScaleToZero.After = s.After.Duration
		}
	}
	if f := spec.Fallback; f != nil {
		ext.Fallback = &adjust.Fallback{Policy: adjust.FallbackPolicy(f.Policy)}
		if ext.Fallback.Policy == "" {
			ext.Fallback.Policy = adjust.FallbackHold
		}
		if f.Replicas != nil {
			ext.Fallback.Replicas = *f.Replicas
		}
		if f.After != nil {
			ext.Fallback.After = f.After.Duration
		}
		if f.MaxAge != nil {
			ext.Fallback.MaxAge = f.MaxAge.Duration
		}
	}
	return ext
}

// metricOptionsOf returns the options of the HPA metrics among metrics, in
// the order of v1alpha1.HPAMetrics.
func metricOptionsOf(metrics []v1alpha1.MetricSpec) []MetricOptions {
	var out []MetricOptions
	for _, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType {
			continue
		}
		out = append(out, MetricOptions{Activation: m.Activation, MissingAsZero: m.TreatMissingAs == v1alpha1.MissingAsZero})
	}
	return out
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
