package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// chartNamespace receives the chart's namespaced objects (dry run only).
const chartNamespace = "e2e-chart"

// TestChartServerSideDryRun renders charts/ebbflow with several value sets and
// applies every object with server-side apply in dry-run mode, so that
// kube-apiserver validates each against its schema (built-in kinds, the
// APIService, the CRD's own definition, and the Prometheus Operator's
// ServiceMonitor CRD, installed for it from the version hack/tools/promoperator
// pins) and admission, without creating anything. Value sets that need
// cert-manager's CRDs are left to test/chart's render checks.
func TestChartServerSideDryRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := env()
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	installServiceMonitorCRD(ctx, t)
	helm := helmPath(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		// Without the APIServices: applied onto the suite's own, which carry a
		// caBundle owned by another field manager, insecureSkipTLSVerify would be
		// merged next to it and rejected. Their spec is the kustomize base's
		// (test/chart checks that).
		{"insecure-tls", []string{"--set", "tls.generate=false", "--set", "adapter.apiService.create=false"}},
		{"autoscaler-only", []string{"--values", "test/chart/testdata/values-autoscaler-only.yaml"}},
		{"adapter-only", []string{"--values", "test/chart/testdata/values-adapter-only.yaml"}},
		{"prometheus-auth", []string{"--values", "test/chart/testdata/values-prometheus-auth.yaml"}},
		{"full", []string{"--values", "test/chart/testdata/values-full.yaml"}},
		// prometheus-adapter's values layout: host network, probes, a sidecar, a named
		// service account with annotations, a strategy, external metrics off.
		{"platform-team", []string{"--values", "test/chart/testdata/values-platform-team.yaml", "--set", "adapter.apiServices.external=false"}},
		{"prometheus-adapter-rules", []string{"--values", "test/chart/testdata/prometheus-adapter-rules-examples.yaml", "--set", "adapter.resourceMetrics.enabled=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := renderChart(t, helm, tc.args...)
			out, err := dryRunApply(ctx, t, manifest)
			if err != nil {
				t.Fatalf("server-side dry run: %v\n%s", err, out)
			}
			applied := strings.Count(out, "(server dry run)")
			if want := countDocs(manifest); applied != want || want == 0 {
				t.Errorf("%d of %d objects applied in dry run:\n%s", applied, want, out)
			}
		})
	}
	// The check can fail: an object kube-apiserver rejects (a pod label key
	// values.schema.json lets through) is reported.
	manifest := renderChart(t, helm, "--set-json", `autoscaler.podLabels={"bad key!":"x"}`)
	if out, err := dryRunApply(ctx, t, manifest); err == nil || !strings.Contains(out, "bad key!") {
		t.Errorf("a Deployment with pod label key \"bad key!\" passed the dry run (err %v):\n%s", err, out)
	}
	// And a ServiceMonitor the Operator's schema refuses (its interval pattern).
	manifest = renderChart(t, helm, "--values", "test/chart/testdata/values-full.yaml", "--set", "serviceMonitor.interval=often")
	if out, err := dryRunApply(ctx, t, manifest); err == nil || !strings.Contains(out, "interval") {
		t.Errorf("a ServiceMonitor with interval \"often\" passed the dry run (err %v):\n%s", err, out)
	}
}

// installServiceMonitorCRD applies the Prometheus Operator's ServiceMonitor
// CRD, from the module hack/tools/promoperator pins (downloaded and checked
// against its go.sum), to the shared cluster, waits until kube-apiserver
// serves it, and deletes it when the test ends.
func installServiceMonitorCRD(ctx context.Context, t *testing.T) {
	t.Helper()
	const mod = "github.com/prometheus-operator/prometheus-operator"
	out, err := exec.CommandContext(ctx, "go", "-C", filepath.Join(buildtools.MustRepoRoot(t), "hack", "tools", "promoperator"),
		"mod", "download", "-json", mod).Output()
	var dl struct{ Dir, Version, Error string }
	if jerr := json.Unmarshal(out, &dl); err != nil || jerr != nil || dl.Error != "" || dl.Dir == "" {
		t.Fatalf("go mod download %s (hack/tools/promoperator): %v %v %s\n%s", mod, err, jerr, dl.Error, out)
	}
	crd := filepath.Join(dl.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_servicemonitors.yaml")
	c := env()
	kubectl := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, c.Kubectl(), append([]string{"--kubeconfig", c.AdminKubeconfig()}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kubectl("apply", "--server-side", "--field-manager=ebbflow-chart-e2e", "-f", crd)
	t.Cleanup(func() {
		cmd := exec.Command(c.Kubectl(), "--kubeconfig", c.AdminKubeconfig(), "delete", "-f", crd, "--wait=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("delete the ServiceMonitor CRD: %v\n%s", err, out)
		}
	})
	kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com")
	t.Logf("ServiceMonitor CRD of the Prometheus Operator %s installed", dl.Version)
}

// helmPath returns the pinned Helm of hack/build-tools.sh (built on first use).
func helmPath(t *testing.T) string {
	t.Helper()
	p, err := buildtools.Path(context.Background(), os.Stderr, "helm")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// helmEnv keeps Helm's cache, configuration and data out of the user's home.
func helmEnv(t *testing.T) []string {
	home := t.TempDir()
	return append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
}

// renderChart runs helm template in the repository root and returns the path
// of the rendered manifest.
func renderChart(t *testing.T, helm string, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm, append([]string{"template", "ebbflow", "charts/ebbflow", "--namespace", chartNamespace}, args...)...)
	cmd.Dir = buildtools.MustRepoRoot(t)
	cmd.Env = helmEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s", args, err, stderr.Bytes())
	}
	path := filepath.Join(t.TempDir(), "chart.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// dryRunApply applies a manifest with server-side apply, dry run, as the
// cluster admin; it returns kubectl's combined output.
func dryRunApply(ctx context.Context, t *testing.T, manifest string) (string, error) {
	t.Helper()
	c := env()
	cmd := exec.CommandContext(ctx, c.Kubectl(), "--kubeconfig", c.AdminKubeconfig(), "apply",
		"--server-side", "--dry-run=server", "--force-conflicts", "--field-manager=ebbflow-chart-e2e", "-f", manifest)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl apply: %w", err)
	}
	return string(out), nil
}

// countDocs counts the objects of a rendered manifest.
func countDocs(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, doc := range strings.Split(string(data), "\n---") {
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "kind: ") {
				n++
				break
			}
		}
	}
	return n
}
