package chart

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestChartMatchesKustomizeBases renders the chart as release "ebbflow" in
// ebbflow-system, with the base's TLS choice (tls.generate=false: a self-made
// certificate and insecureSkipTLSVerify), and requires the objects of
// manifests/adapter and manifests/autoscaler: same kinds and names, same RBAC
// rules, bindings, pod specs (args, ports, probes, security, volumes), Services,
// PDBs, APIServices and CRD. Only the rule file's content (the chart's default
// is prometheus-adapter's default rules), selector labels (the chart adds
// app.kubernetes.io/instance) and the Namespace (Helm's --create-namespace, see
// charts/ebbflow/README.md) may differ.
func TestChartMatchesKustomizeBases(t *testing.T) {
	var base []*unstructured.Unstructured
	for _, dir := range []string{"manifests/adapter", "manifests/autoscaler"} {
		out, err := run(t, tool(t, "KUSTOMIZE"), "build", dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range decode(t, out) {
			// Both bases declare the namespace, so that each installs alone.
			if o.GetKind() == "Namespace" && slices.ContainsFunc(base, func(b *unstructured.Unstructured) bool {
				return b.GetKind() == "Namespace" && b.GetName() == o.GetName()
			}) {
				continue
			}
			base = append(base, o)
		}
	}
	chart := byKey(t, mustTemplate(t, nil, "tls.generate=false"))
	kust := byKey(t, base)

	for k, want := range kust {
		if want.GetKind() == "Namespace" {
			continue
		}
		got, ok := chart[k]
		if !ok {
			t.Errorf("the chart does not render %s", k)
			continue
		}
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/part-of"} {
			if g, w := got.GetLabels()[l], want.GetLabels()[l]; g != w {
				t.Errorf("%s: label %s is %q, kustomize has %q", k, l, g, w)
			}
		}
		compareObject(t, k, got, want)
	}
	for k := range chart {
		if _, ok := kust[k]; !ok {
			t.Errorf("the chart renders %s, which the kustomize bases do not", k)
		}
	}
}

// compareObject compares the essential fields of one kind.
func compareObject(t *testing.T, k string, got, want *unstructured.Unstructured) {
	t.Helper()
	same := func(path ...string) {
		g, _, _ := unstructured.NestedFieldCopy(got.Object, path...)
		w, _, _ := unstructured.NestedFieldCopy(want.Object, path...)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: .%s differs\n chart:     %v\n kustomize: %v", k, strings.Join(path, "."), g, w)
		}
	}
	switch got.GetKind() {
	case "ClusterRole", "Role":
		same("rules")
		same("aggregationRule")
	case "ClusterRoleBinding", "RoleBinding":
		same("roleRef")
		same("subjects")
	case "Deployment":
		for _, f := range []string{"replicas", "revisionHistoryLimit", "strategy"} {
			same("spec", f)
		}
		same("spec", "template", "metadata", "labels", "app.kubernetes.io/component")
		g, w := podSpec(got), podSpec(want)
		if !reflect.DeepEqual(g, w) {
			for f := range mergeKeys(g, w) {
				if !reflect.DeepEqual(g[f], w[f]) {
					t.Errorf("%s: pod spec .%s differs\n chart:     %v\n kustomize: %v", k, f, g[f], w[f])
				}
			}
		}
		selectorWithin(t, k, got, "spec", "selector", "matchLabels")
	case "Service":
		same("spec", "ports")
		same("spec", "type")
		selectorWithin(t, k, got, "spec", "selector")
	case "PodDisruptionBudget":
		same("spec", "minAvailable")
		same("spec", "maxUnavailable")
		same("spec", "unhealthyPodEvictionPolicy")
		selectorWithin(t, k, got, "spec", "selector", "matchLabels")
	case "APIService":
		g, _, _ := unstructured.NestedMap(got.Object, "spec")
		w, _, _ := unstructured.NestedMap(want.Object, "spec")
		for _, s := range []map[string]any{g, w} {
			if svc, ok := s["service"].(map[string]any); ok && svc["port"] == nil {
				svc["port"] = float64(443) // the API's default (JSON numbers decode as float64)
			}
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: spec differs\n chart:     %v\n kustomize: %v", k, g, w)
		}
	case "CustomResourceDefinition":
		same("spec")
	case "ConfigMap":
		if _, ok, _ := unstructured.NestedString(got.Object, "data", "config.yaml"); !ok {
			t.Errorf("%s: no data config.yaml", k)
		}
	case "Lease":
		same("spec") // none: the holder's fields are the replicas'
	case "ServiceAccount":
	default:
		t.Errorf("%s: no comparison for kind %s; add one to compareObject", k, got.GetKind())
	}
}

// podSpec returns a Deployment's pod spec without the selector labels of its
// topology spread constraints.
func podSpec(d *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if tsc, ok := spec["topologySpreadConstraints"].([]any); ok {
		for _, c := range tsc {
			delete(c.(map[string]any), "labelSelector")
		}
	}
	return spec
}

func mergeKeys(a, b map[string]any) map[string]bool {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// selectorWithin checks that the selector at path matches the chart's pod
// template labels (or, for Services and PDBs, the Deployment's of the same
// component) and names the component.
func selectorWithin(t *testing.T, k string, o *unstructured.Unstructured, path ...string) {
	t.Helper()
	sel, _, _ := unstructured.NestedStringMap(o.Object, path...)
	name := sel["app.kubernetes.io/name"]
	if !slices.Contains([]string{"ebbflow-adapter", "ebbflow-autoscaler"}, name) {
		t.Errorf("%s: selector %v names no component", k, sel)
	}
	if sel["app.kubernetes.io/instance"] != release {
		t.Errorf("%s: selector %v lacks app.kubernetes.io/instance=%s", k, sel, release)
	}
}
