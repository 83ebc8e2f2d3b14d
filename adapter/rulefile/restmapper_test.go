package rulefile

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDefaultRESTMapperResources(t *testing.T) {
	mapper := DefaultRESTMapper()
	tests := []struct {
		in         schema.GroupVersionResource
		want       schema.GroupVersionResource
		namespaced bool
	}{
		{schema.GroupVersionResource{Resource: "pods"}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{schema.GroupVersionResource{Resource: "pod"}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{schema.GroupVersionResource{Resource: "node"}, schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, false},
		{schema.GroupVersionResource{Resource: "namespace"}, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
		{schema.GroupVersionResource{Resource: "persistentvolumes"}, schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, false},
		{schema.GroupVersionResource{Resource: "persistentvolumeclaim"}, schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, true},
		{schema.GroupVersionResource{Resource: "endpoints"}, schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, true},
		{schema.GroupVersionResource{Resource: "events"}, schema.GroupVersionResource{Version: "v1", Resource: "events"}, true},
		{schema.GroupVersionResource{Group: "apps", Resource: "deployment"}, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
		{schema.GroupVersionResource{Resource: "statefulsets"}, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, true},
		{schema.GroupVersionResource{Resource: "horizontalpodautoscaler"}, schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, true},
		{schema.GroupVersionResource{Resource: "ingresses"}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, true},
		{schema.GroupVersionResource{Resource: "ingressclass"}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}, false},
		{schema.GroupVersionResource{Resource: "storageclasses"}, schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}, false},
		{schema.GroupVersionResource{Resource: "clusterrole"}, schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
		{schema.GroupVersionResource{Resource: "jobs"}, schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			got, err := mapper.ResourceFor(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ResourceFor = %v, %v; want %v", got, err, tt.want)
			}
			kind, err := mapper.KindFor(got)
			if err != nil {
				t.Fatalf("KindFor(%v): %v", got, err)
			}
			mapping, err := mapper.RESTMapping(kind.GroupKind(), kind.Version)
			if err != nil {
				t.Fatalf("RESTMapping(%v): %v", kind, err)
			}
			if namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace; namespaced != tt.namespaced {
				t.Errorf("%v namespaced = %v, want %v", kind, namespaced, tt.namespaced)
			}
		})
	}
}

func TestDefaultRESTMapperUnknown(t *testing.T) {
	_, err := DefaultRESTMapper().ResourceFor(schema.GroupVersionResource{Resource: "widgets"})
	if !meta.IsNoMatchError(err) {
		t.Errorf("ResourceFor(widgets) error = %v, want a no-match error", err)
	}
}

func TestDefaultRESTMapperSingularizer(t *testing.T) {
	mapper := DefaultRESTMapper()
	for plural, want := range map[string]string{"pods": "pod", "ingresses": "ingress", "endpoints": "endpoints", "networkpolicies": "networkpolicy"} {
		if got, err := mapper.ResourceSingularizer(plural); err != nil || got != want {
			t.Errorf("ResourceSingularizer(%s) = %q, %v; want %q", plural, got, err, want)
		}
	}
}

// TestGuessedPluralsMatchClientset holds the claim of DefaultRESTMapper's doc: the
// guessed plural of every built-in kind is the name its typed client uses.
func TestGuessedPluralsMatchClientset(t *testing.T) {
	resources := builtinResources()
	if len(resources) < 100 {
		t.Fatalf("found %d built-in resources on the clientset, want over 100", len(resources))
	}
	for _, r := range resources {
		if plural, _ := meta.UnsafeGuessKindToResource(r.gvk); plural.Resource != r.plural {
			t.Errorf("%v: guessed plural %q, clientset says %q", r.gvk, plural.Resource, r.plural)
		}
	}
}
