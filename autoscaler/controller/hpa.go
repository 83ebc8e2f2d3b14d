package controller

import (
	"context"
	"fmt"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	autoscalingclient "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/record"
)

// HPABackend serves autoscaling/v2 HorizontalPodAutoscalers (drop-in mode).
// The extensions pause and dry-run are set by annotations
// (v1alpha1.PausedAnnotation, v1alpha1.DryRunAnnotation); the decision
// record is kept in v1alpha1.LastDecisionAnnotation.
type HPABackend struct {
	informer cache.SharedIndexInformer
	lister   autoscalinglisters.HorizontalPodAutoscalerLister
	client   autoscalingclient.HorizontalPodAutoscalersGetter
	// signatures caches the signature of each HPA's record annotation, so
	// that an evaluation decodes it only when it changed.
	mu         sync.Mutex
	signatures map[string]signature
}

type signature struct{ raw, sig string }

var _ Backend = (*HPABackend)(nil)

// NewHPABackend returns the drop-in backend over a shared HPA informer.
func NewHPABackend(informer autoscalinginformers.HorizontalPodAutoscalerInformer, client autoscalingclient.HorizontalPodAutoscalersGetter) *HPABackend {
	return &HPABackend{informer: informer.Informer(), lister: informer.Lister(), client: client, signatures: map[string]signature{}}
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
		b.mu.Lock()
		delete(b.signatures, namespace+"/"+name)
		b.mu.Unlock()
		return nil, err
	}
	hpa := shared.DeepCopy()
	obj := &Object{
		Namespace:       hpa.Namespace,
		Name:            hpa.Name,
		Generation:      hpa.Generation,
		ResourceVersion: hpa.ResourceVersion,
		Spec:            hpa.Spec,
		Status:          *hpa.Status.DeepCopy(),
		Source:          hpa,
	}
	obj.Extensions, obj.Warnings = extensionsFromAnnotations(hpa.Annotations)
	obj.LastDecisionSignature = b.signature(namespace+"/"+name, hpa.Annotations[v1alpha1.LastDecisionAnnotation])
	obj.ScaleEvents = hpa.Annotations[v1alpha1.ScaleEventsAnnotation]
	return obj, nil
}

// signature returns the signature of the record in an HPA's annotation,
// decoding it only when it changed since the last call for that HPA.
func (b *HPABackend) signature(key, raw string) string {
	if raw == "" {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.signatures[key]; ok && s.raw == raw {
		return s.sig
	}
	sig := ""
	if rec, err := record.Decode(raw); err == nil {
		sig = record.Signature(rec)
	}
	b.signatures[key] = signature{raw: raw, sig: sig}
	return sig
}

// extensionsFromAnnotations reads pause and dry-run from an HPA's
// annotations: "true" or "false"; any other value is a warning and false.
func extensionsFromAnnotations(ann map[string]string) (adjust.Spec, []string) {
	var warnings []string
	flag := func(key string) bool {
		v, ok := ann[key]
		switch {
		case !ok || v == "false":
			return false
		case v == "true":
			return true
		}
		warnings = append(warnings, fmt.Sprintf("annotation %s has the invalid value %q (want \"true\" or \"false\"); treated as \"false\"", key, v))
		return false
	}
	// Evaluated before warnings is read: the order of a return list's
	// operands relative to the calls in it is unspecified.
	spec := adjust.Spec{Paused: flag(v1alpha1.PausedAnnotation), DryRun: flag(v1alpha1.DryRunAnnotation)}
	return spec, warnings
}

// controlAnnotations are the annotations whose change is evaluated at once.
var controlAnnotations = []string{v1alpha1.PausedAnnotation, v1alpha1.DryRunAnnotation}

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

// DecisionInStatus implements Backend: HPAs keep the record in an annotation.
func (b *HPABackend) DecisionInStatus() bool { return false }

// WriteAnnotations implements Backend with one merge patch of the
// annotations (no resource version precondition: it touches nothing else).
func (b *HPABackend) WriteAnnotations(ctx context.Context, obj *Object, rec *v1alpha1.DecisionRecord, events bool) (string, error) {
	values := map[string]string{}
	if rec != nil {
		value, err := record.Encode(rec)
		if err != nil {
			return "", err
		}
		values[v1alpha1.LastDecisionAnnotation] = value
	}
	if events {
		values[v1alpha1.ScaleEventsAnnotation] = obj.ScaleEvents
	}
	patch, err := annotationsPatch(values)
	if err != nil {
		return "", err
	}
	updated, err := b.client.HorizontalPodAutoscalers(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", err
	}
	return updated.ResourceVersion, nil
}
