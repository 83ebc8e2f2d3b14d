package controller

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// targetScale is the scale target's /scale and the resource it was read from.
type targetScale struct {
	scale    *autoscalingv1.Scale
	resource schema.GroupResource
}

// scaleError is a failure to read the scale: cause is what the event and the
// condition show, context what the returned error adds.
type scaleError struct {
	context string
	cause   error
}

func (e *scaleError) Error() string { return e.context + ": " + e.cause.Error() }
func (e *scaleError) Unwrap() error { return e.cause }

// getScale reads the scale target's /scale through each REST mapping of its
// kind in turn; the first mapping's error is reported if none works.
func (c *Controller) getScale(ctx context.Context, obj *Object) (*targetScale, *scaleError) {
	ref := obj.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, &scaleError{"invalid API version in scale target reference", err}
	}
	mappings, err := c.deps.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, &scaleError{"unable to determine resource for scale target reference", err}
	}
	var first error
	for _, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := c.deps.Scales.Scales(obj.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return &targetScale{scale: s, resource: gr}, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = errors.New("unrecognized resource")
	}
	target := fmt.Sprintf("%s/%s/%s", ref.Kind, obj.Namespace, ref.Name)
	return nil, &scaleError{"failed to query scale subresource for " + target, first}
}
