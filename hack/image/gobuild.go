package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// buildinfoPkg is where the binaries keep their link-time version.
const buildinfoPkg = "github.com/ebbflow/ebbflow/internal/buildinfo"

// goBuild builds the main packages of images for p into outDir, one static
// binary each, with env added to go's environment, and returns each image's binary by image name (images of the
// same package share it). One go build for all packages: they share most of
// their dependencies and link in parallel.
func goBuild(ctx context.Context, dir, outDir string, images []imageSpec, p platform, src source, env []string, stderr io.Writer) (map[string]string, error) {
	baseOf := map[string]string{} // package -> binary name
	pkgOf := map[string]string{}  // binary name -> package
	var pkgs []string
	for _, im := range images {
		if _, done := baseOf[im.Package]; done {
			continue
		}
		base := path.Base(filepath.ToSlash(im.Package))
		if base == "." || base == "/" || base == ".." || strings.Contains(im.Package, "...") {
			return nil, fmt.Errorf("image %s: package %q must name one main package", im.Name, im.Package)
		}
		if other, dup := pkgOf[base]; dup {
			return nil, fmt.Errorf("packages %q and %q share the binary name %q", other, im.Package, base)
		}
		baseOf[im.Package], pkgOf[base] = base, im.Package
		pkgs = append(pkgs, im.Package)
	}
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Revision=%s", buildinfoPkg, src.Version, buildinfoPkg, src.Revision)
	// -buildvcs=false: the revision is in the ldflags; VCS stamping would
	// also record untracked files and make the digest depend on them.
	args := append([]string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", outDir + string(filepath.Separator)}, pkgs...)
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Env = append(cmd.Env, p.goEnv()...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", p, err)
	}
	bins := map[string]string{}
	for _, im := range images {
		bins[im.Name] = filepath.Join(outDir, baseOf[im.Package])
	}
	return bins, nil
}
