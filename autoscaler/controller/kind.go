package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	autoscalingclient "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// Object is one autoscaler, whatever its kind, as a reconcile sees it. It is
// owned by the reconcile that got it: Kind.Get returns a fresh deep copy.
type Object struct {
	Namespace  string
	Name       string
	Generation int64
	// ResourceVersion is the version the informer's cache holds.
	ResourceVersion string
	// Spec is what the evaluation reads of the spec: the HPA spec, the
	// ebbflow extensions (from the Autoscaler's spec, or a drop-in HPA's
	// annotations), the per-metric options and the ClusterProportional
	// metrics.
	Spec   evaluation.Spec
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// ProportionalStatus holds the ClusterProportional metrics' entries of
	// status.currentMetrics, by their index in the spec's metrics.
	ProportionalStatus map[int]v1alpha1.ClusterProportionalStatus
	// LastDecisionSignature is evaluation.Signature of the stored record, ""
	// when none (or when it could not be read); LastDecisionBy is its
	// evaluatedBy.
	LastDecisionSignature string
	LastDecisionBy        string
	// ScaleEvents are the stored rescales (behavior.EncodeEvents);
	// ScaleEventsField names where they are stored, for messages.
	ScaleEvents      string
	ScaleEventsField string
	// Warnings are problems with the object's settings that do not stop its
	// evaluation (for example an invalid annotation value); each becomes a
	// Warning event.
	Warnings []string
	// Source is the API object (a deep copy): events are recorded on it and
	// Kind.Store writes it back.
	Source runtime.Object
}

// Change says what an evaluation changed in an Object.
type Change struct {
	// Status is true when Status or ProportionalStatus changed, Record when
	// the decision record's outcome did, ScaleEvents when ScaleEvents did.
	Status, Record, ScaleEvents bool
	// BuildRecord builds the whole decision record; called only to write it.
	BuildRecord func() v1alpha1.DecisionRecord
}

// recordChanged reports whether obj's stored decision record is to be
// rewritten after res: its outcome changed, or another replica wrote it (a
// new leader rewrites it once, so that the record says who decides now).
func (c *Controller) recordChanged(obj *Object, res *evaluation.Result) bool {
	return evaluation.Signature(&res.Outline) != obj.LastDecisionSignature || obj.LastDecisionBy != c.cfg.Identity
}

// buildRecord is Change.BuildRecord for res: the evaluation's whole record,
// stamped with the identity of this replica (evaluatedBy, I/O metadata the
// pure evaluation does not know).
func (c *Controller) buildRecord(res *evaluation.Result) func() v1alpha1.DecisionRecord {
	return func() v1alpha1.DecisionRecord {
		rec := res.Record()
		rec.EvaluatedBy = c.cfg.Identity
		return rec
	}
}

// Stored is what Kind.Store wrote: the API writes that succeeded, in
// order.
type Stored []Write

// Write is one API write: what it wrote ("status", "annotations") and the
// object's resource version after it.
type Write struct {
	What, ResourceVersion string
}

// StatusError is a failed write of the status subresource.
type StatusError struct {
	Name string
	Err  error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("failed to update status for %s: %v", e.Name, e.Err)
}
func (e *StatusError) Unwrap() error { return e.Err }

// Kind is one kind of autoscaler object.
type Kind interface {
	// Name names the kind; it prefixes queue keys and must be unique among
	// the kinds of a controller and contain no '/'.
	Name() string
	// Informer is the shared informer of the kind; the controller adds its
	// event handlers and waits for it to sync.
	Informer() cache.SharedIndexInformer
	// Get returns a deep copy of the object from the informer's cache, or a
	// NotFound API error.
	Get(namespace, name string) (*Object, error)
	// Store persists what changed of obj — its status, decision record and
	// scale events — in the fewest writes its kind allows, writing nothing
	// when nothing it keeps changed. A failed status write is a
	// *StatusError. Stored reports the writes that succeeded, also with an
	// error.
	Store(ctx context.Context, obj *Object, change Change) (Stored, error)
}

// HPAKind serves autoscaling/v2 HorizontalPodAutoscalers (drop-in mode).
// The extensions pause and dry-run and the sync period are set by
// annotations (v1alpha1.PausedAnnotation, DryRunAnnotation,
// SyncPeriodAnnotation; read by evaluation.FromHPA, as `ebbflow simulate`
// reads them); the decision record and the scale events are kept in
// annotations too (v1alpha1.LastDecisionAnnotation, ScaleEventsAnnotation).
type HPAKind struct {
	informer cache.SharedIndexInformer
	lister   autoscalinglisters.HorizontalPodAutoscalerLister
	client   autoscalingclient.HorizontalPodAutoscalersGetter
	// signatures caches the signature of each HPA's record annotation, so
	// that an evaluation decodes it only when it changed.
	mu         sync.Mutex
	signatures map[string]signature
}

type signature struct{ raw, sig, by string }

var _ Kind = (*HPAKind)(nil)

// NewHPAKind returns the drop-in kind over a shared HPA informer.
func NewHPAKind(informer autoscalinginformers.HorizontalPodAutoscalerInformer, client autoscalingclient.HorizontalPodAutoscalersGetter) *HPAKind {
	return &HPAKind{informer: informer.Informer(), lister: informer.Lister(), client: client, signatures: map[string]signature{}}
}

// hpaKindName is the Kind of HPAKind.
const hpaKindName = "HorizontalPodAutoscaler"

// Name implements Kind.
func (b *HPAKind) Name() string { return hpaKindName }

// Informer implements Kind.
func (b *HPAKind) Informer() cache.SharedIndexInformer { return b.informer }

// Get implements Kind.
func (b *HPAKind) Get(namespace, name string) (*Object, error) {
	shared, err := b.lister.HorizontalPodAutoscalers(namespace).Get(name)
	if err != nil {
		b.mu.Lock()
		delete(b.signatures, namespace+"/"+name)
		b.mu.Unlock()
		return nil, err
	}
	hpa := shared.DeepCopy()
	obj := &Object{
		Namespace:        hpa.Namespace,
		Name:             hpa.Name,
		Generation:       hpa.Generation,
		ResourceVersion:  hpa.ResourceVersion,
		Status:           *hpa.Status.DeepCopy(),
		ScaleEvents:      hpa.Annotations[v1alpha1.ScaleEventsAnnotation],
		ScaleEventsField: "annotation " + v1alpha1.ScaleEventsAnnotation,
		Source:           hpa,
	}
	obj.Spec, obj.Warnings = evaluation.FromHPA(hpa)
	obj.LastDecisionSignature, obj.LastDecisionBy = b.signature(namespace+"/"+name, hpa.Annotations[v1alpha1.LastDecisionAnnotation])
	return obj, nil
}

// signature returns the signature and the evaluatedBy of the record in an
// HPA's annotation, decoding it only when it changed since the last call for
// that HPA.
func (b *HPAKind) signature(key, raw string) (sig, by string) {
	if raw == "" {
		return "", ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.signatures[key]; ok && s.raw == raw {
		return s.sig, s.by
	}
	if rec, err := evaluation.DecodeRecord(raw); err == nil {
		sig, by = evaluation.Signature(rec), rec.EvaluatedBy
	}
	b.signatures[key] = signature{raw: raw, sig: sig, by: by}
	return sig, by
}

// controlAnnotations are the annotations whose change is evaluated at once.
var controlAnnotations = []string{v1alpha1.PausedAnnotation, v1alpha1.DryRunAnnotation, v1alpha1.SyncPeriodAnnotation}

// Store implements Kind: the status through the status subresource when
// it changed, then the record (when its outcome changed) and the scale
// events (when they changed) in one merge patch of the annotations (no
// resource version precondition: it touches nothing else).
func (b *HPAKind) Store(ctx context.Context, obj *Object, change Change) (Stored, error) {
	var out Stored
	if change.Status {
		hpa := obj.Source.(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
		hpa.Status = obj.Status
		updated, err := b.client.HorizontalPodAutoscalers(obj.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
		if err != nil {
			return out, &StatusError{Name: obj.Name, Err: err}
		}
		out = append(out, Write{"status", updated.ResourceVersion})
	}
	if !change.Record && !change.ScaleEvents {
		return out, nil
	}
	values := map[string]string{}
	if change.Record {
		rec := change.BuildRecord()
		value, err := evaluation.EncodeRecord(&rec)
		if err != nil {
			return out, fmt.Errorf("failed to store the decision record and scale events of %s: %w", obj.Name, err)
		}
		values[v1alpha1.LastDecisionAnnotation] = value
	}
	if change.ScaleEvents {
		values[v1alpha1.ScaleEventsAnnotation] = obj.ScaleEvents
	}
	updated, err := b.patchAnnotations(ctx, obj, values)
	if err != nil {
		return out, fmt.Errorf("failed to store the decision record and scale events of %s: %w", obj.Name, err)
	}
	out = append(out, Write{"annotations", updated})
	return out, nil
}

// patchAnnotations sets annotations with one merge patch; a "" value
// removes its annotation.
func (b *HPAKind) patchAnnotations(ctx context.Context, obj *Object, values map[string]string) (string, error) {
	annotations := make(map[string]any, len(values))
	for k, v := range values {
		if v == "" {
			annotations[k] = nil
		} else {
			annotations[k] = v
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return "", err
	}
	updated, err := b.client.HorizontalPodAutoscalers(obj.Namespace).Patch(ctx, obj.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", err
	}
	return updated.ResourceVersion, nil
}
