// Package chart tests the Helm chart in charts/ebbflow with the pinned Helm and
// kustomize of hack/build-tools.sh: lint, renders with several value sets,
// agreement with the kustomize bases in manifests/, and prometheus-adapter
// chart values. `make verify-chart` runs it; the server-side dry-run against a
// real kube-apiserver is in test/e2e (chart_test.go).
package chart

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

const (
	// release and namespace under which the chart renders the objects of the
	// kustomize bases, names included.
	release   = "ebbflow"
	namespace = "ebbflow-system"
)

var (
	toolsOnce sync.Once
	toolPaths map[string]string
	toolsErr  error
)

// tool returns the path of a pinned tool (HELM, KUSTOMIZE), built by
// hack/build-tools.sh when missing.
func tool(t testing.TB, key string) string {
	t.Helper()
	toolsOnce.Do(func() {
		toolPaths, toolsErr = buildtools.Paths(context.Background(), io.Discard, "helm", "kustomize")
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	p, err := buildtools.Lookup(toolPaths, key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a tool in the repository root and returns its stdout.
func run(t testing.TB, bin string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = buildtools.MustRepoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Helm keeps caches and config under HOME; keep them out of the user's.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.Bytes(), out)
	}
	return out, nil
}

// template renders the chart with the given values files (relative to
// testdata/) and --set flags.
func template(t testing.TB, files []string, sets ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := []string{"template", release, "charts/ebbflow", "--namespace", namespace}
	for _, f := range files {
		args = append(args, "--values", filepath.Join("test", "chart", "testdata", f))
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	out, err := run(t, tool(t, "HELM"), args...)
	if err != nil {
		return nil, err
	}
	return decode(t, out), nil
}

// mustTemplate is template that fails the test on error.
func mustTemplate(t testing.TB, files []string, sets ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := template(t, files, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode splits a multi-document YAML stream into objects; a document with a
// duplicate key (which some parsers silently resolve) fails the test.
func decode(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("reading rendered YAML: %v", err)
		}
		js, err := sigsyaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// key names an object.
func key(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", o.GetKind(), ns, o.GetName())
	}
	return fmt.Sprintf("%s %s", o.GetKind(), o.GetName())
}

// byKey indexes objects by key, failing on duplicates.
func byKey(t testing.TB, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if _, dup := m[key(o)]; dup {
			t.Errorf("rendered twice: %s", key(o))
		}
		m[key(o)] = o
	}
	return m
}

// find returns the object of a kind and name, or nil.
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// containerArgs returns the args of a Deployment's first container.
func containerArgs(t testing.TB, d *unstructured.Unstructured) []string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s has no containers", key(d))
	}
	args, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
	return args
}

// toYAML renders v for messages and substring checks.
func toYAML(t testing.TB, v any) string {
	t.Helper()
	out, err := sigsyaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
