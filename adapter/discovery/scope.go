package discovery

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MapperScope answers Scoper from a RESTMapper, so cluster-scoped resources (nodes,
// namespaces, persistentvolumes, and any cluster-scoped CRD) are served without a
// namespace, whatever labels their series carry.
type MapperScope struct {
	Mapper meta.RESTMapper
}

var _ Scoper = MapperScope{}

// Namespaced implements Scoper.
func (s MapperScope) Namespaced(gr schema.GroupResource) bool {
	gvk, err := s.Mapper.KindFor(gr.WithVersion(""))
	if err != nil {
		return true
	}
	mapping, err := s.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return true
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace
}
