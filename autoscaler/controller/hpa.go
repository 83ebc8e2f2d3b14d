package controller

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	autoscalingclient "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"
)

// HPABackend serves autoscaling/v2 HorizontalPodAutoscalers (drop-in mode).
type HPABackend struct {
	informer cache.SharedIndexInformer
	lister   autoscalinglisters.HorizontalPodAutoscalerLister
	client   autoscalingclient.HorizontalPodAutoscalersGetter
}

var _ Backend = (*HPABackend)(nil)

// NewHPABackend returns the drop-in backend over a shared HPA informer.
func NewHPABackend(informer autoscalinginformers.HorizontalPodAutoscalerInformer, client autoscalingclient.HorizontalPodAutoscalersGetter) *HPABackend {
	return &HPABackend{informer: informer.Informer(), lister: informer.Lister(), client: client}
}

// hpaKind is the Kind of HPABackend.
const hpaKind = "HorizontalPodAutoscaler"

// Kind implements Backend.
func (b *HPABackend) Kind() string { return hpaKind }

// Informer implements Backend.
func (b *HPABackend) Informer() cache.SharedIndexInformer { return b.informer }

// Get implements Backend.
func (b *HPABackend) Get(namespace, name string) (*Object, error) {
	shared, err := b.lister.HorizontalPodAutoscalers(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	hpa := shared.DeepCopy()
	return &Object{
		Namespace:       hpa.Namespace,
		Name:            hpa.Name,
		Generation:      hpa.Generation,
		ResourceVersion: hpa.ResourceVersion,
		Spec:            hpa.Spec,
		Status:          *hpa.Status.DeepCopy(),
		Source:          hpa,
	}, nil
}

// UpdateStatus implements Backend.
func (b *HPABackend) UpdateStatus(ctx context.Context, obj *Object) (string, error) {
	hpa := obj.Source.(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
	hpa.Status = obj.Status
	updated, err := b.client.HorizontalPodAutoscalers(obj.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	return updated.ResourceVersion, nil
}
