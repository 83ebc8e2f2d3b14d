package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the module whose root holds hack/ and the tool cache.
const modulePath = "github.com/ebbflow/ebbflow"

// defaultTools are hack/build-tools.sh's default set (what a cluster without
// a real node runs); realNodeTools are added for a real node.
var (
	defaultTools  = []string{"kube-apiserver", "kube-controller-manager", "kubectl", "etcd", "kwok"}
	realNodeTools = []string{"kube-scheduler", "kubelet", "kube-proxy"}
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

// findRepoRoot walks up from the working directory to the go.mod of the
// ebbflow module.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// locateTools runs hack/build-tools.sh --print-paths, which builds missing
// tools (minutes on a fresh machine, nothing once cached; its progress goes to
// log) and prints KEY=VALUE lines with their paths.
func locateTools(ctx context.Context, log io.Writer, realNode bool) (tools, error) {
	root, err := findRepoRoot()
	if err != nil {
		return tools{}, err
	}
	args := []string{"--print-paths"}
	if realNode {
		args = append(args, append(defaultTools, realNodeTools...)...)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-tools.sh"), args...)
	cmd.Dir = root
	cmd.Stderr = log
	out, err := cmd.Output()
	if err != nil {
		return tools{}, fmt.Errorf("hack/build-tools.sh --print-paths: %w", err)
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			vals[k] = v
		}
	}
	t := tools{
		repoRoot:       root,
		apiserver:      vals["KUBE_APISERVER"],
		controllerMgr:  vals["KUBE_CONTROLLER_MANAGER"],
		kubectl:        vals["KUBECTL"],
		etcd:           vals["ETCD"],
		kwok:           vals["KWOK"],
		kwokStages:     vals["KWOK_STAGES"],
		adapterBinPath: filepath.Join(root, "_output", "cluster", "ebbflow-adapter"),
		kubelet:        vals["KUBELET"],
		scheduler:      vals["KUBE_SCHEDULER"],
		proxy:          vals["KUBE_PROXY"],
	}
	want := map[string]string{
		"KUBE_APISERVER": t.apiserver, "KUBE_CONTROLLER_MANAGER": t.controllerMgr, "KUBECTL": t.kubectl,
		"ETCD": t.etcd, "KWOK": t.kwok, "KWOK_STAGES": t.kwokStages,
	}
	if realNode {
		want["KUBELET"], want["KUBE_SCHEDULER"], want["KUBE_PROXY"] = t.kubelet, t.scheduler, t.proxy
	}
	var errs []error
	for name, p := range want {
		if p == "" {
			errs = append(errs, fmt.Errorf("hack/build-tools.sh printed no %s", name))
			continue
		}
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
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
	cmd := exec.CommandContext(ctx, "go", "build", "-o", t.adapterBinPath, "./cmd/ebbflow-adapter")
	cmd.Dir = t.repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/ebbflow-adapter: %w\n%s", err, out)
	}
	return nil
}

// ToolPath returns the path of a tool of hack/build-tools.sh (e.g. "helm"),
// building it first if it is not cached.
func ToolPath(ctx context.Context, name string) (string, error) {
	root, err := findRepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-tools.sh"), "--print-paths", name)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-tools.sh --print-paths %s: %w", name, err)
	}
	key := strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "="
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("hack/build-tools.sh printed no %s", key)
}
