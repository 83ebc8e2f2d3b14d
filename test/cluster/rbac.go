package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// rbacKinds are the objects taken from a shipped kustomization for the tests.
var rbacKinds = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true}

// renderShipped renders manifests/<base> with kustomize (kubectl kustomize, the tool
// users apply it with) and returns the objects of the given kinds.
func (c *Cluster) renderShipped(ctx context.Context, base string, kinds map[string]bool) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(c.tools.repoRoot, "manifests", base)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.tools.kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, stderr.String())
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(&stdout))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read rendered %s: %w", base, err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decode rendered %s: %w", base, err)
		}
		o := &unstructured.Unstructured{Object: m}
		if len(m) > 0 && kinds[o.GetKind()] {
			out = append(out, o)
		}
	}
}

// applyShippedRBAC applies the RBAC of manifests/<base> as rendered, with the
// subjects naming the component's ServiceAccount replaced by user (the client
// certificate identity the component runs as here). Other subjects (e.g. the HPA
// controller's) are kept. So the e2e tests run the component with exactly the
// permissions users install: a missing one fails a test.
func (c *Cluster) applyShippedRBAC(ctx context.Context, base, serviceAccount, user string) error {
	objs, err := c.renderShipped(ctx, base, rbacKinds)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return fmt.Errorf("manifests/%s renders no RBAC", base)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	for _, o := range objs {
		if err := rebindSubjects(o, serviceAccount, user); err != nil {
			return err
		}
		if err := apply(ctx, dyn, o); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// rebindSubjects replaces ServiceAccount subjects named serviceAccount by user.
func rebindSubjects(o *unstructured.Unstructured, serviceAccount, user string) error {
	subjects, found, err := unstructured.NestedSlice(o.Object, "subjects")
	if err != nil || !found {
		return err
	}
	for i, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == serviceAccount {
			subjects[i] = map[string]any{"kind": rbacv1.UserKind, "apiGroup": rbacv1.GroupName, "name": user}
		}
	}
	return unstructured.SetNestedSlice(o.Object, subjects, "subjects")
}
