package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// BuildImages builds the named images (ebbflow-adapter, ebbflow-autoscaler,
// ebbflow, ebbflow-sampleapp, pause) for linux/amd64 with hack/image into dir
// and returns the tarballs' paths, in the order asked.
func BuildImages(ctx context.Context, repoRoot, dir string, names ...string) ([]string, error) {
	args := []string{"run", "./hack/image", "--platforms=linux/amd64", "--output=" + dir}
	for _, n := range names {
		args = append(args, "--only="+n)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go %v: %w\n%s", args, err, out)
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(dir, n+".tar")
	}
	return paths, nil
}
