package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// controlPlaneTools run in every cluster; kwok runs the fake Nodes (unless
// Options.NoFakeNodes) and realNodeTools the real node.
var (
	controlPlaneTools = []string{"kube-apiserver", "kube-controller-manager", "kubectl", "etcd"}
	realNodeTools     = []string{"kube-scheduler", "kubelet", "kube-proxy"}
)

// tools are the paths of the binaries a cluster runs.
type tools struct {
	repoRoot      string
	apiserver     string
	controllerMgr string
	kubectl       string
	etcd          string
	kwok          string
	kwokStages    string
	// The real node's, located only for Options.RealNode.
	kubelet, scheduler, proxy string
	adapterBinPath            string // where the adapter is built
}

// locateTools runs hack/build-tools.sh --print-paths, which builds missing
// tools (minutes on a fresh machine, nothing once cached; its progress goes to
// log) and prints KEY=VALUE lines with their paths.
func locateTools(ctx context.Context, log io.Writer, realNode, fakeNodes bool) (tools, error) {
	root, err := buildtools.RepoRoot()
	if err != nil {
		return tools{}, err
	}
	names := slices.Clone(controlPlaneTools)
	if fakeNodes {
		names = append(names, "kwok")
	}
	if realNode {
		names = append(names, realNodeTools...)
	}
	vals, err := buildtools.Paths(ctx, log, names...)
	if err != nil {
		return tools{}, err
	}
	var errs []error
	path := func(key string) string {
		p, err := buildtools.Lookup(vals, key)
		errs = append(errs, err)
		return p
	}
	t := tools{
		repoRoot:       root,
		apiserver:      path("KUBE_APISERVER"),
		controllerMgr:  path("KUBE_CONTROLLER_MANAGER"),
		kubectl:        path("KUBECTL"),
		etcd:           path("ETCD"),
		adapterBinPath: filepath.Join(root, "_output", "cluster", "ebbflow-adapter"),
	}
	if fakeNodes {
		t.kwok, t.kwokStages = path("KWOK"), path("KWOK_STAGES")
	}
	if realNode {
		t.kubelet, t.scheduler, t.proxy = path("KUBELET"), path("KUBE_SCHEDULER"), path("KUBE_PROXY")
	}
	return t, errors.Join(errs...)
}

// buildAdapter compiles cmd/ebbflow-adapter into t.adapterBinPath. The go
// command leaves an up-to-date binary alone, so repeated builds cost about a
// second.
func buildAdapter(ctx context.Context, t tools) error {
	if err := os.MkdirAll(filepath.Dir(t.adapterBinPath), 0o755); err != nil {
		return fmt.Errorf("create adapter output directory: %w", err)
	}
	// The images' flags (static, -trimpath): their compiled libraries are
	// then shared with hack/image's builds.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", t.adapterBinPath, "./cmd/ebbflow-adapter")
	cmd.Dir, cmd.Env = t.repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/ebbflow-adapter: %w\n%s", err, out)
	}
	return nil
}
