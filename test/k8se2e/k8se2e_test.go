// Package k8se2e runs the fast subset of Kubernetes v1.37.2's own HPA e2e
// tests against ebbflow-autoscaler in drop-in mode, for make test: the four
// specs of hack/k8se2e --fast (CPU scale-up on light load, the short
// downscale stabilization window, external metrics up and down, to zero and
// back) on the real node, with the chart installed from our images. The
// whole selection, side by side with kube-controller-manager's HPA, is make
// test-k8s-e2e (docs/k8s-e2e.md). Needs root (the real node).
package k8se2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

func TestKubernetesHPAE2EFastSubset(t *testing.T) {
	root, err := buildtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The real-node lock may make the run wait for another package's node.
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "k8se2e")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./hack/k8se2e")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./hack/k8se2e: %v\n%s", err, out)
	}
	out := t.TempDir()
	started := time.Now()
	cmd := exec.CommandContext(ctx, bin, "--fast", "--modes=ebbflow", "--out="+out, "--timeout=25m")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.WaitDelay = 2 * time.Minute
	err = cmd.Run()
	if report, rerr := os.ReadFile(filepath.Join(out, "report.md")); rerr == nil {
		t.Logf("report:\n%s", report)
	}
	if err != nil {
		if log, lerr := os.ReadFile(filepath.Join(out, "ebbflow", "e2e.log")); lerr == nil && len(log) > 8000 {
			t.Logf("end of e2e.test's log:\n%s", log[len(log)-8000:])
		}
		t.Fatalf("hack/k8se2e --fast --modes=ebbflow: %v", err)
	}
	// e2e.test writes test-kuberc* directories into its TMPDIR and leaves them.
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "test-kuberc*"))
	for _, p := range left {
		if fi, err := os.Stat(p); err == nil && !fi.ModTime().Before(started) {
			t.Errorf("e2e.test left %s in %s", p, os.TempDir())
		}
	}
}
