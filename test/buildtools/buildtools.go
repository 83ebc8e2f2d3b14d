// Package buildtools finds, for tests and test harnesses, the repository root
// and the pinned tools of hack/build-tools.sh (kube-apiserver, helm, thanos,
// prometheus3, ...), which that script builds on first use and caches.
package buildtools

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is the module whose root holds hack/build-tools.sh.
const modulePath = "github.com/ebbflow/ebbflow"

// RepoRoot walks up from the working directory to the go.mod of the ebbflow
// module.
func RepoRoot() (string, error) {
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

// MustRepoRoot returns RepoRoot and fails the test when there is none.
func MustRepoRoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Paths runs hack/build-tools.sh --print-paths for the named tools (the
// default set when none is named), which builds what is not cached — minutes
// on a fresh machine, its progress written to log — and returns the KEY=VALUE
// lines it prints (KUBE_APISERVER, HELM, PROMETHEUS3, ...). ctx bounds the
// build.
func Paths(ctx context.Context, log io.Writer, names ...string) (map[string]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-tools.sh"), append([]string{"--print-paths"}, names...)...)
	cmd.Dir = root
	cmd.Stderr = log
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("hack/build-tools.sh --print-paths %s: %w", strings.Join(names, " "), err)
	}
	return ParsePaths(out), nil
}

// ParsePaths reads hack/build-tools.sh --print-paths output.
func ParsePaths(out []byte) map[string]string {
	vals := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && v != "" {
			vals[k] = v
		}
	}
	return vals
}

// Key is the --print-paths key of tool name: "kube-apiserver" → "KUBE_APISERVER".
func Key(name string) string { return strings.ToUpper(strings.ReplaceAll(name, "-", "_")) }

// Path returns the path of one tool, built first if it is not cached, and
// checks that it exists.
func Path(ctx context.Context, log io.Writer, name string) (string, error) {
	vals, err := Paths(ctx, log, name)
	if err != nil {
		return "", err
	}
	return Lookup(vals, Key(name))
}

// Lookup returns vals[key], or an error when the script printed none or the
// file is missing.
func Lookup(vals map[string]string, key string) (string, error) {
	p, ok := vals[key]
	if !ok {
		return "", fmt.Errorf("hack/build-tools.sh printed no %s", key)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	return p, nil
}
