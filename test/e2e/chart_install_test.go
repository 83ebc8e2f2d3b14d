package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// TestChartInstallUpgradeUninstall installs the chart for real with Helm
// (APIServices and CRD left out: the cluster's own adapter and CRD serve the
// other tests), upgrades it and uninstalls it. It checks what only a live
// release shows: the generated serving certificate survives an upgrade (Helm's
// lookup), NOTES render, and uninstall removes the cluster-scoped RBAC too.
func TestChartInstallUpgradeUninstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const rel, ns = "e2e-chart", "e2e-chart-install"
	helm := helmPath(t)
	c := env()
	common := []string{"--namespace", ns, "--kubeconfig", c.AdminKubeconfig(),
		"--set", "adapter.apiService.create=false", "--set", "autoscaler.crd.install=false"}

	out := runHelm(ctx, t, helm, append([]string{"install", rel, "charts/ebbflow", "--create-namespace"}, common...)...)
	if !strings.Contains(out, "ebbflow-adapter reads http://prometheus.monitoring.svc:9090") || !strings.Contains(out, "registered for no metrics API group") {
		t.Errorf("install printed no NOTES:\n%s", out)
	}
	secrets := c.Client().CoreV1().Secrets(ns)
	before, err := secrets.Get(ctx, "e2e-chart-ebbflow-adapter-serving-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("generated serving certificate: %v", err)
	}
	if len(before.Data["ca.crt"]) == 0 || len(before.Data["tls.key"]) == 0 {
		t.Fatalf("serving certificate Secret lacks ca.crt or tls.key: %v", before.Data)
	}
	for _, d := range []string{"e2e-chart-ebbflow-adapter", "e2e-chart-ebbflow-autoscaler"} {
		if _, err := c.Client().AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{}); err != nil {
			t.Errorf("Deployment %s: %v", d, err)
		}
	}

	runHelm(ctx, t, helm, append([]string{"upgrade", rel, "charts/ebbflow", "--set", "adapter.replicas=1"}, common...)...)
	after, err := secrets.Get(ctx, "e2e-chart-ebbflow-adapter-serving-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Data["ca.crt"], after.Data["ca.crt"]) || !bytes.Equal(before.Data["tls.crt"], after.Data["tls.crt"]) {
		t.Error("helm upgrade replaced the generated CA or certificate")
	}

	runHelm(ctx, t, helm, "uninstall", rel, "--namespace", ns, "--kubeconfig", c.AdminKubeconfig(), "--wait")
	if _, err := c.Client().RbacV1().ClusterRoles().Get(ctx, "e2e-chart-ebbflow-adapter-resource-reader", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole left after uninstall (err %v)", err)
	}
	if _, err := c.Client().AppsV1().Deployments(ns).Get(ctx, "e2e-chart-ebbflow-adapter", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment left after uninstall (err %v)", err)
	}
	_ = c.Client().CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
}

// runHelm runs Helm in the repository root with its state in a temporary
// directory and returns its output, failing the test on error.
func runHelm(ctx context.Context, t *testing.T, helm string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = buildtools.MustRepoRoot(t)
	cmd.Env = helmEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
