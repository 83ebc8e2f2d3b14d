package realnode

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/cluster"
)

// The helpers below are the kit's (test/realnode/kit), failing the test on
// error.

// restrictedNamespace creates a namespace whose pods kube-apiserver's Pod
// Security admission holds to the restricted standard.
func restrictedNamespace(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := env.RestrictedNamespace(ctx, name); err != nil {
		t.Fatal(err)
	}
}

// kubectl runs the pinned kubectl as cluster admin and returns its stdout.
func kubectl(ctx context.Context, t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := env.Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func kubectlErr(ctx context.Context, stdin string, args ...string) (string, error) {
	return env.Kubectl(ctx, stdin, args...)
}

// helm runs the pinned Helm in the repository root with its state in a
// temporary directory.
func helm(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := env.Helm(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitDeploymentReady waits until every replica of the Deployment is
// updated, available and Ready, and returns it.
func waitDeploymentReady(ctx context.Context, t *testing.T, ns, name string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	d, err := cluster.WaitDeploymentReady(ctx, env.C.Client(), ns, name, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitAPIServicesAvailable waits until each named APIService is Available
// and returns how long that took.
func waitAPIServicesAvailable(ctx context.Context, t *testing.T, timeout time.Duration, names ...string) time.Duration {
	t.Helper()
	took, err := env.WaitAPIServicesAvailable(ctx, timeout, names...)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// getRaw GETs an API path through kube-apiserver as cluster admin and
// decodes the JSON answer into out.
func getRaw(ctx context.Context, path string, out any) error { return env.GetRaw(ctx, path, out) }

// podsOf lists the pods of a namespace matching selector.
func podsOf(ctx context.Context, t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := env.C.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// livePods are the pods not being deleted: a pod of an earlier rollout may
// still be terminating, its containers already stopped.
func livePods(pods []corev1.Pod) []corev1.Pod {
	var live []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// writeFile writes data to a new file in a temporary directory.
func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
