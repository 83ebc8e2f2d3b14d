package resourcemetrics

import (
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// labelSelector is the list's label selector, everything when it has none.
func labelSelector(opts *metainternalversion.ListOptions) labels.Selector {
	if opts == nil || opts.LabelSelector == nil {
		return labels.Everything()
	}
	return opts.LabelSelector
}

// fieldSelector is the list's field selector, or nil when it has none.
func fieldSelector(opts *metainternalversion.ListOptions) fields.Selector {
	if opts == nil || opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		return nil
	}
	return opts.FieldSelector
}

// objectFields are the fields a field selector may name on a metrics object:
// metadata.name, and metadata.namespace for namespaced ones (as for any
// object of the API). A selector on another field matches nothing.
func objectFields(meta *metav1.ObjectMeta, namespaced bool) fields.Set {
	set := fields.Set{"metadata.name": meta.Name}
	if namespaced {
		set["metadata.namespace"] = meta.Namespace
	}
	return set
}
