// Package fake provides an in-memory objects.Lister for unit tests.
package fake

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/objects"
)

// Object is one listed object.
type Object struct {
	Resource  schema.GroupResource
	Namespace string
	Name      string
	Labels    map[string]string
}

// Lister lists from Objects.
type Lister struct {
	Objects []Object
	// Err, when set, fails every call.
	Err error
}

var _ objects.Lister = (*Lister)(nil)

// Names implements objects.Lister.
func (l *Lister) Names(_ context.Context, gr schema.GroupResource, namespace string, selector labels.Selector) ([]string, error) {
	if l.Err != nil {
		return nil, l.Err
	}
	if selector == nil {
		selector = labels.Everything()
	}
	var out []string
	for _, o := range l.Objects {
		if o.Resource == gr && o.Namespace == namespace && selector.Matches(labels.Set(o.Labels)) {
			out = append(out, o.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}
