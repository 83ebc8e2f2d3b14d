package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The images Kubernetes' HPA e2e tests run, built here from the sources in
// k8s.io/kubernetes v1.37.2 (hack/tools/k8se2e pins it) instead of pulled:
//
//   - resource-consumer (test/images/resource-consumer): /consumer, the
//     entrypoint, which runs /consume-cpu/consume-cpu (a path relative to the
//     working directory /, as upstream's Dockerfile lays it out) for CPU and
//     Debian's stress for memory (upstream installs it with clean-install on
//     debian-base bookworm; here the bookworm binary of the host and the
//     shared libraries it loads);
//   - agnhost (test/images/agnhost): the one binary, entrypoint /agnhost,
//     default command pause; the tests run its resource-consumer-controller
//     and external-metrics commands. Upstream's image also carries Alpine
//     tools, CoreDNS and a registry for other tests, which these do not use.
//
// Each image is named as e2e.test --list-images names it and written as a
// docker-archive tarball that `ctr images import` reads.

// testImage is one image to build.
type testImage struct {
	repo  string    // last component of the repository, as in --list-images
	files []imgFile // the layer's files
	cfg   v1.Config // entrypoint, command, working directory, environment
	ref   name.Tag  // from --list-images
	bins  []string  // binaries the go build makes for it
	pkgs  []string  // their main packages
}

// imgFile is a file of an image: at path, from src on the host.
type imgFile struct{ path, src string }

const k8sPkg = "k8s.io/kubernetes/test/images/"

// buildTestImages builds the binaries (one go build in hack/tools/k8se2e),
// lays out resource-consumer and agnhost and writes their tarballs into dir;
// it returns the tarballs and the image names. e2eImages are the lines of
// e2e.test --list-images.
func buildTestImages(ctx context.Context, root, dir string, e2eImages []string, log io.Writer) (tars, refs []string, err error) {
	t0 := time.Now()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return nil, nil, err
	}
	stressFiles, err := stressAndLibs()
	if err != nil {
		return nil, nil, err
	}
	images := []*testImage{
		{
			repo: "resource-consumer",
			pkgs: []string{k8sPkg + "resource-consumer", k8sPkg + "resource-consumer/consume-cpu"},
			bins: []string{"resource-consumer", "consume-cpu"},
			files: append([]imgFile{
				{"consumer", filepath.Join(bin, "resource-consumer")},
				{"consume-cpu/consume-cpu", filepath.Join(bin, "consume-cpu")},
			}, stressFiles...),
			cfg: v1.Config{Entrypoint: []string{"/consumer"}, WorkingDir: "/", Env: []string{pathEnv},
				ExposedPorts: map[string]struct{}{"8080/tcp": {}}},
		},
		{
			repo:  "agnhost",
			pkgs:  []string{k8sPkg + "agnhost"},
			bins:  []string{"agnhost"},
			files: []imgFile{{"agnhost", filepath.Join(bin, "agnhost")}},
			cfg:   v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, WorkingDir: "/", Env: []string{pathEnv}},
		},
	}
	var pkgs []string
	for _, im := range images {
		ref, err := listedImage(e2eImages, im.repo)
		if err != nil {
			return nil, nil, err
		}
		if im.ref, err = name.NewTag(ref); err != nil {
			return nil, nil, fmt.Errorf("image name %q: %w", ref, err)
		}
		pkgs = append(pkgs, im.pkgs...)
	}
	args := append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", bin + "/"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = filepath.Join(root, "hack", "tools", "k8se2e")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64",
		"GOFLAGS=-mod=readonly -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	for _, im := range images {
		p := filepath.Join(dir, im.repo+".tar")
		if err := writeImage(p, im); err != nil {
			return nil, nil, fmt.Errorf("image %s: %w", im.ref, err)
		}
		tars, refs = append(tars, p), append(refs, im.ref.String())
	}
	fmt.Fprintf(log, "k8se2e: test images %s built in %v\n", strings.Join(refs, ", "), time.Since(t0).Round(time.Second))
	return tars, refs, nil
}

const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// testImageRefs are the names test/utils/image/manifest.go of v1.37.2 gives
// the images (imageutils.ResourceConsumer, imageutils.Agnhost), checked
// against e2e.test --list-images: --list-images names other agnhost versions
// too, for other tests.
var testImageRefs = map[string]string{
	"resource-consumer": "registry.k8s.io/e2e-test-images/resource-consumer:1.14",
	"agnhost":           "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
}

// listedImage returns the image of repository repo, once e2e.test's
// --list-images lines show the binary uses it.
func listedImage(lines []string, repo string) (string, error) {
	want := testImageRefs[repo]
	for _, l := range lines {
		if strings.TrimSpace(l) == want {
			return want, nil
		}
	}
	return "", fmt.Errorf("e2e.test --list-images does not name %s (the image of %s in Kubernetes v1.37.2)", want, repo)
}

// stressAndLibs are Debian's stress (package stress, installed by
// hack/install-node.sh) and the shared libraries ldd says it loads, at the
// same paths in the image as on the host.
func stressAndLibs() ([]imgFile, error) {
	const stress = "/usr/bin/stress"
	if _, err := os.Stat(stress); err != nil {
		return nil, fmt.Errorf("resource-consumer needs Debian's stress (apt-get install stress; hack/install-node.sh): %w", err)
	}
	out, err := exec.Command("ldd", stress).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", stress, err)
	}
	files := []imgFile{{strings.TrimPrefix(stress, "/"), stress}}
	for _, line := range strings.Split(string(out), "\n") {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x...)"; linux-vdso has no file.
		f := strings.Fields(line)
		var p string
		switch {
		case len(f) >= 3 && f[1] == "=>":
			p = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			p = f[0]
		}
		if p != "" {
			files = append(files, imgFile{strings.TrimPrefix(p, "/"), p})
		}
	}
	return files, nil
}

// writeImage writes im as a one-layer linux/amd64 image in a docker-archive
// tarball at p. Files are regular files (symbolic links on the host
// followed), owned by root, mode 0755, with their parent directories.
func writeImage(p string, im *testImage) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	sort.Slice(im.files, func(i, j int) bool { return im.files[i].path < im.files[j].path })
	for _, f := range im.files {
		var parents []string
		for d := path.Dir(f.path); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return err
			}
		}
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.path, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layerData := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = im.cfg
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return tarball.WriteToFile(p, im.ref, img)
}
