package promtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the module whose root holds hack/build-tools.sh.
const modulePath = "github.com/ebbflow/ebbflow"

// prometheus3Key is the line hack/build-tools.sh --print-paths prometheus3
// prints for the prometheus binary.
const prometheus3Key = "PROMETHEUS3="

// prometheus3Path returns the path of the Prometheus 3 binary of
// hack/build-tools.sh, which builds it first when it is not cached (minutes;
// its progress goes to stderr). ctx bounds the build.
func prometheus3Path(ctx context.Context) (string, error) {
	root, err := findRepoRoot()
	if err != nil {
		return "", fmt.Errorf("prometheus 3: %w", err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-tools.sh"), "--print-paths", "prometheus3")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-tools.sh --print-paths prometheus3: %w", err)
	}
	path, err := parsePrometheus3Path(out)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("prometheus 3: %w", err)
	}
	return path, nil
}

// parsePrometheus3Path finds the PROMETHEUS3= line in build-tools' output.
func parsePrometheus3Path(out []byte) (string, error) {
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prometheus3Key); ok && v != "" {
			return v, nil
		}
	}
	return "", errors.New("hack/build-tools.sh printed no " + prometheus3Key)
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
