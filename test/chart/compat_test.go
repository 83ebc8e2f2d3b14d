package chart

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// rendered are the objects of one render with the adapter's Deployment, pod
// spec and container at hand.
type rendered struct {
	objs      []*unstructured.Unstructured
	deploy    *unstructured.Unstructured
	pod       map[string]any
	container map[string]any
}

// renderJSON renders the chart with --set-json KEY=JSON pairs (and more helm
// arguments after them), as release ebbflow in ebbflow-system.
func renderJSON(t *testing.T, files []string, setJSON ...string) (*rendered, error) {
	t.Helper()
	args := []string{"template", release, "charts/ebbflow", "--namespace", namespace}
	for _, f := range files {
		args = append(args, "--values", "test/chart/testdata/"+f)
	}
	for _, s := range setJSON {
		args = append(args, "--set-json", s)
	}
	out, err := run(t, tool(t, "HELM"), args...)
	if err != nil {
		return nil, err
	}
	r := &rendered{objs: decode(t, out)}
	r.deploy = findSuffix(r.objs, "Deployment", "-adapter")
	if r.deploy != nil {
		r.pod, _, _ = unstructured.NestedMap(r.deploy.Object, "spec", "template", "spec")
		cs, _ := r.pod["containers"].([]any)
		if len(cs) > 0 {
			r.container = cs[0].(map[string]any)
		}
	}
	return r, nil
}

// at returns the value at a dotted path in m (a map of maps), or nil.
func at(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// jsonValue is v as helm reads it from values (JSON numbers as float64).
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := sigsyaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// equal reports got and want, compared as JSON values, as an error.
func equal(t *testing.T, what string, got, want any) error {
	t.Helper()
	if g, w := jsonValue(t, got), jsonValue(t, want); !reflect.DeepEqual(g, w) {
		return fmt.Errorf("%s is %v, want %v", what, g, w)
	}
	return nil
}

// contains reports whether list holds want (compared as JSON values).
func contains(t *testing.T, what string, list any, want any) error {
	t.Helper()
	l, _ := jsonValue(t, list).([]any)
	w := jsonValue(t, want)
	if ws, ok := w.([]any); ok {
		for _, x := range ws {
			if err := contains(t, what, l, x); err != nil {
				return err
			}
		}
		return nil
	}
	if !slices.ContainsFunc(l, func(x any) bool { return reflect.DeepEqual(x, w) }) {
		return fmt.Errorf("%s %v lacks %v", what, l, w)
	}
	return nil
}

// subset reports whether every key of want is in got with its value.
func subset(t *testing.T, what string, got map[string]string, want any) error {
	t.Helper()
	for k, v := range jsonValue(t, want).(map[string]any) {
		if got[k] != v {
			return fmt.Errorf("%s %v lacks %s: %v", what, got, k, v)
		}
	}
	return nil
}

// hasArg reports whether the adapter's container has the argument.
func (r *rendered) hasArg(t *testing.T, want string) error {
	t.Helper()
	args := containerArgs(t, r.deploy)
	if !slices.Contains(args, want) {
		return fmt.Errorf("adapter args %v lack %s", args, want)
	}
	return nil
}

// ruleFile returns the adapter's rendered rule file, parsed.
func (r *rendered) ruleFile(t *testing.T) map[string]any {
	t.Helper()
	cm := findSuffix(r.objs, "ConfigMap", "-adapter-config")
	if cm == nil {
		t.Fatal("no rule file ConfigMap")
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	var m map[string]any
	if err := sigsyaml.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// apiServices returns the names of the rendered APIServices, sorted.
func (r *rendered) apiServices() []string {
	var out []string
	for _, o := range r.objs {
		if o.GetKind() == "APIService" {
			out = append(out, o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// leafKeys lists the dotted paths of the leaves of a values map, descending
// into the maps named in into only.
func leafKeys(m map[string]any, prefix string, into map[string]bool) []string {
	var out []string
	for k, v := range m {
		p := prefix + k
		if sub, ok := v.(map[string]any); ok && into[p] {
			out = append(out, leafKeys(sub, p+".", into)...)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
