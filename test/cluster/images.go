package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// imagePackages are the main packages of the images the tests build.
var imagePackages = map[string]string{
	"ebbflow-adapter":    "./cmd/ebbflow-adapter",
	"ebbflow-autoscaler": "./cmd/ebbflow-autoscaler",
	"ebbflow":            "./cmd/ebbflow",
	"ebbflow-sampleapp":  "./test/sampleapp/cmd/sampleapp",
}

// BuildImages builds the named images (ebbflow-adapter, ebbflow-autoscaler,
// ebbflow, ebbflow-sampleapp) for linux/amd64 with hack/image into dir, named
// as `make image` names them, and returns the tarballs' paths in the order
// asked.
func BuildImages(ctx context.Context, dir string, names ...string) ([]string, error) {
	repoRoot, err := buildtools.RepoRoot()
	if err != nil {
		return nil, err
	}
	args := []string{"--platforms=linux/amd64", "--output=" + dir}
	for _, n := range names {
		pkg, ok := imagePackages[n]
		if !ok {
			return nil, fmt.Errorf("build images: no image %q", n)
		}
		args = append(args, "--image="+n+"="+pkg)
	}
	return runImageTool(ctx, repoRoot, dir, args, names)
}

// buildPauseImage builds the kubelet's sandbox image, named PauseImage.
func buildPauseImage(ctx context.Context, t tools) (string, error) {
	dir := filepath.Join(t.repoRoot, "_output", "cluster", "images")
	repo, tag, _ := strings.Cut(PauseImage, ":")
	paths, err := runImageTool(ctx, t.repoRoot, dir, []string{"--platforms=linux/amd64", "--output=" + dir,
		"--image=pause=./hack/image/pause", "--repository=" + path.Dir(repo), "--tag=" + tag}, []string{"pause"})
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// runImageTool runs hack/image with args and returns the tarballs of names.
func runImageTool(ctx context.Context, repoRoot, dir string, toolArgs, names []string) ([]string, error) {
	args := append([]string{"run", "./hack/image"}, toolArgs...)
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
