package rulefile

import (
	"cmp"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
)

// DefaultRESTMapper returns a RESTMapper that knows every built-in resource of the
// Kubernetes release client-go was built for, with no cluster: for checking rule files
// offline (`ebbflow config check`) and for tests. It does not know custom resources.
//
// It resolves names the way the discovery-based mapper of a live cluster does (and so the
// way prometheus-adapter does): plural, singular and kind all resolve ("pods", "pod",
// "Pod"); an empty group matches any group; when several groups or versions serve a
// resource, the core group wins, then groups that have a GA version, then the others
// (so deployments are apps, not extensions), each in alphabetical order; within a group
// GA wins over beta, beta over alpha. Scope (namespaced or cluster) is exact.
//
// Kinds come from client-go's scheme; the resources served and their scope come from
// client-go's typed clientset (a resource whose client takes a namespace is namespaced).
// Plural and singular names are meta.UnsafeGuessKindToResource's, which agree with the
// clientset for every built-in resource (a test holds this).
//
// Each call builds a new mapper (a few milliseconds); the result is safe for concurrent
// use and callers may keep it.
func DefaultRESTMapper() meta.RESTMapper {
	return restmapper.NewDiscoveryRESTMapper(builtinGroupResources())
}

// builtinResource is one resource found on the typed clientset.
type builtinResource struct {
	gvk        schema.GroupVersionKind
	plural     string // lower-cased name of the clientset's getter, e.g. "pods"
	namespaced bool
}

// builtinGroupResources lays the clientset's resources out as discovery would.
func builtinGroupResources() []*restmapper.APIGroupResources {
	byGroup := map[string]*restmapper.APIGroupResources{}
	for _, r := range builtinResources() {
		g := byGroup[r.gvk.Group]
		if g == nil {
			g = &restmapper.APIGroupResources{
				Group:              metav1.APIGroup{Name: r.gvk.Group},
				VersionedResources: map[string][]metav1.APIResource{},
			}
			byGroup[r.gvk.Group] = g
		}
		plural, singular := meta.UnsafeGuessKindToResource(r.gvk)
		g.VersionedResources[r.gvk.Version] = append(g.VersionedResources[r.gvk.Version], metav1.APIResource{
			Name:         plural.Resource,
			SingularName: singular.Resource,
			Namespaced:   r.namespaced,
			Group:        r.gvk.Group,
			Version:      r.gvk.Version,
			Kind:         r.gvk.Kind,
		})
	}
	names := make([]string, 0, len(byGroup))
	for name, g := range byGroup {
		names = append(names, name)
		setVersions(g)
	}
	// Core first, as discovery lists it; then groups with a GA version before groups
	// with none (extensions, whose resources moved to apps and networking.k8s.io and
	// which no supported cluster serves); then by name.
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(
			cmp.Compare(groupRank(byGroup[a]), groupRank(byGroup[b])),
			strings.Compare(a, b))
	})
	out := make([]*restmapper.APIGroupResources, len(names))
	for i, name := range names {
		out[i] = byGroup[name]
	}
	return out
}

func groupRank(g *restmapper.APIGroupResources) int {
	switch preferred := g.Group.PreferredVersion.Version; {
	case g.Group.Name == "":
		return 0
	case !strings.Contains(preferred, "alpha") && !strings.Contains(preferred, "beta"):
		return 1
	}
	return 2
}

// setVersions fills the group's version list, most preferred first.
func setVersions(g *restmapper.APIGroupResources) {
	versions := make([]string, 0, len(g.VersionedResources))
	for v := range g.VersionedResources {
		versions = append(versions, v)
	}
	slices.SortFunc(versions, func(a, b string) int {
		return version.CompareKubeAwareVersionStrings(b, a)
	})
	for _, v := range versions {
		g.Group.Versions = append(g.Group.Versions, metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: g.Group.Name, Version: v}.String(),
			Version:      v,
		})
	}
	g.Group.PreferredVersion = g.Group.Versions[0]
}

// builtinResources walks kubernetes.Interface: each method without arguments returns a
// group-version client (CoreV1, AppsV1, ...), whose methods return one resource's client,
// taking a namespace argument exactly when the resource is namespaced.
func builtinResources() []builtinResource {
	var out []builtinResource
	clientset := reflect.TypeFor[kubernetes.Interface]()
	for i := range clientset.NumMethod() {
		gvClient := clientset.Method(i).Type
		if gvClient.NumIn() != 0 || gvClient.NumOut() != 1 || gvClient.Out(0).Kind() != reflect.Interface {
			continue
		}
		iface := gvClient.Out(0)
		for j := range iface.NumMethod() {
			if r, ok := resourceOfGetter(iface.Method(j)); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// resourceOfGetter recognises Pods(namespace string) PodInterface and
// Nodes() NodeInterface; anything else (RESTClient, Evictions, ...) gives false.
func resourceOfGetter(m reflect.Method) (builtinResource, bool) {
	t := m.Type
	stringType := reflect.TypeFor[string]()
	if t.NumOut() != 1 || t.Out(0).Kind() != reflect.Interface ||
		t.NumIn() > 1 || (t.NumIn() == 1 && t.In(0) != stringType) {
		return builtinResource{}, false
	}
	obj, ok := objectOfClient(t.Out(0))
	if !ok {
		return builtinResource{}, false
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) != 1 {
		return builtinResource{}, false
	}
	return builtinResource{gvk: gvks[0], plural: strings.ToLower(m.Name), namespaced: t.NumIn() == 1}, true
}

// objectOfClient returns a new object of the type a resource client serves, found from
// Get's result or, for create-only resources (reviews), Create's argument.
func objectOfClient(client reflect.Type) (runtime.Object, bool) {
	var ptr reflect.Type
	if get, ok := client.MethodByName("Get"); ok && get.Type.NumOut() > 0 {
		ptr = get.Type.Out(0)
	} else if create, ok := client.MethodByName("Create"); ok && create.Type.NumIn() > 1 {
		ptr = create.Type.In(1)
	} else {
		return nil, false
	}
	if ptr.Kind() != reflect.Pointer {
		return nil, false
	}
	obj, ok := reflect.New(ptr.Elem()).Interface().(runtime.Object)
	return obj, ok
}
