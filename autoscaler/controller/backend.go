package controller

import (
	"context"
	"encoding/json"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/pipeline"
)

// Object is one autoscaler, whatever its kind, as a reconcile sees it. It is
// owned by the reconcile that got it: Backend.Get returns a fresh deep copy.
type Object struct {
	Namespace  string
	Name       string
	Generation int64
	// ResourceVersion is the version the informer's cache holds.
	ResourceVersion string
	Spec            autoscalingv2.HorizontalPodAutoscalerSpec
	Status          autoscalingv2.HorizontalPodAutoscalerStatus
	// Extensions are the ebbflow extensions the object sets (from the
	// Autoscaler's spec, or a drop-in HPA's annotations).
	Extensions adjust.Spec
	// Proportional are the ClusterProportional metrics (Autoscalers only);
	// they are not in Spec.Metrics.
	Proportional []ProportionalSource
	// ProportionalStatus holds the ClusterProportional metrics' entries of
	// status.currentMetrics, by their index in the spec's metrics: read by
	// Get, replaced by the evaluation, written by UpdateStatus.
	ProportionalStatus map[int]v1alpha1.ClusterProportionalStatus
	// MetricOptions has one entry per Spec.Metrics entry: ebbflow's options
	// of that metric (zero for drop-in HPAs).
	MetricOptions []MetricOptions
	// LastDecision is the stored decision record where it is part of the
	// status (DecisionInStatus), nil when none.
	LastDecision *v1alpha1.DecisionRecord
	// LastDecisionSignature is record.Signature of the stored record, ""
	// when none (or when it could not be read).
	LastDecisionSignature string
	// ScaleEvents are the stored rescales (behavior.EncodeEvents): read by
	// Get, written by UpdateStatus where they are part of the status
	// (DecisionInStatus), else by WriteAnnotations
	// (v1alpha1.ScaleEventsAnnotation).
	ScaleEvents string
	// Warnings are problems with the object's settings that do not stop its
	// evaluation (for example an invalid annotation value); each becomes a
	// Warning event.
	Warnings []string
	// Source is the API object (a deep copy): events are recorded on it and
	// Backend.UpdateStatus writes it back.
	Source runtime.Object
}

// MetricOptions are ebbflow's per-metric options.
type MetricOptions = pipeline.MetricOptions

// Backend is one kind of autoscaler object.
type Backend interface {
	// Kind names the kind; it prefixes queue keys and must be unique among
	// the backends of a controller and contain no '/'.
	Kind() string
	// Informer is the shared informer of the kind; the controller adds its
	// event handlers and waits for it to sync.
	Informer() cache.SharedIndexInformer
	// Get returns a deep copy of the object from the informer's cache, or a
	// NotFound API error.
	Get(namespace, name string) (*Object, error)
	// UpdateStatus writes obj.Status (and obj.LastDecision when
	// DecisionInStatus) through the status subresource and returns the
	// object's new resource version.
	UpdateStatus(ctx context.Context, obj *Object) (string, error)
	// DecisionInStatus is true when the decision record and the scale
	// events are part of the status (written by UpdateStatus), false when
	// WriteAnnotations stores them.
	DecisionInStatus() bool
	// WriteAnnotations stores, apart from the status and in one write, rec
	// (when not nil) and obj.ScaleEvents (when events; "" removes them), and
	// returns the object's new resource version (only called when
	// DecisionInStatus is false).
	WriteAnnotations(ctx context.Context, obj *Object, rec *v1alpha1.DecisionRecord, events bool) (string, error)
}

// annotationsPatch is a merge patch setting annotations; a "" value removes
// its annotation.
func annotationsPatch(values map[string]string) ([]byte, error) {
	annotations := make(map[string]any, len(values))
	for k, v := range values {
		if v == "" {
			annotations[k] = nil
		} else {
			annotations[k] = v
		}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
}
