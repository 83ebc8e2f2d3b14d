package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = "../.."

// buildTiny builds the pause package (the smallest main package here) as the
// images "pause" and "tiny" for amd64 and arm64 into a new directory.
func buildTiny(t *testing.T, epoch string) (results []result, dir string) {
	t.Helper()
	t.Setenv("SOURCE_DATE_EPOCH", epoch)
	dir = t.TempDir()
	o, err := parseFlags([]string{"-C", repoRoot, "--output", dir, "--repository", "example.test/r", "--tag", "v9.9.9",
		"--platforms", "linux/amd64,linux/arm64", "--image", "pause=./hack/image/pause", "--image", "tiny=./hack/image/pause"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	results, err = build(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return results, dir
}

func TestSameSourceSameDigest(t *testing.T) {
	first, dir1 := buildTiny(t, "1700000000")
	second, dir2 := buildTiny(t, "1700000000")
	later, _ := buildTiny(t, "1700000001")
	for i := range first {
		if first[i].Digest != second[i].Digest {
			t.Errorf("%s: digest %s, then %s from the same source", first[i].Name, first[i].Digest, second[i].Digest)
		}
		a, _ := os.ReadFile(filepath.Join(dir1, first[i].Name+".tar"))
		b, _ := os.ReadFile(filepath.Join(dir2, first[i].Name+".tar"))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: tarballs differ (%d and %d bytes)", first[i].Name, len(a), len(b))
		}
		if later[i].Digest == first[i].Digest {
			t.Errorf("%s: another SOURCE_DATE_EPOCH gave the same digest %s", first[i].Name, first[i].Digest)
		}
	}
}

func TestImageContents(t *testing.T) {
	results, _ := buildTiny(t, "1700000000")
	created := time.Unix(1700000000, 0).UTC()
	wantUser := map[string]string{"pause": "65535:65535", "tiny": "65532:65532"}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if want := "example.test/r/" + r.Name + ":v9.9.9"; r.Ref != want {
				t.Errorf("ref %q, want %q", r.Ref, want)
			}
			idx := readLayout(t, r)
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if got := im.Annotations["org.opencontainers.image.created"]; got != "2023-11-14T22:13:20Z" {
				t.Errorf("index created annotation %q", got)
			}
			var archs []string
			for _, d := range im.Manifests {
				archs = append(archs, d.Platform.OS+"/"+d.Platform.Architecture)
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, img, r.Name, d.Platform.Architecture, wantUser[r.Name], created)
			}
			if !slices.Equal(archs, []string{"linux/amd64", "linux/arm64"}) {
				t.Errorf("platforms %v", archs)
			}
		})
	}
}

// readLayout extracts r's tarball and opens it as an OCI layout, checking
// the annotations of its index.json.
func readLayout(t *testing.T, r result) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	names := extract(t, r.Path, dir)
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %v", names)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("index.json has %d entries, want 1", len(tm.Manifests))
	}
	d := tm.Manifests[0]
	if d.Digest != r.Digest || d.Annotations[annotationContainerdName] != r.Ref || d.Annotations[annotationRefName] != "v9.9.9" {
		t.Errorf("index.json entry %+v, want digest %s named %s", d, r.Digest, r.Ref)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// checkImage checks img's config and that its one layer holds only the
// binary /name for arch.
func checkImage(t *testing.T, img v1.Image, name, arch, user string, created time.Time) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != arch || c.User != user || !slices.Equal(c.Entrypoint, []string{"/" + name}) ||
		c.WorkingDir != "/" || len(c.Cmd) != 0 || !cf.Created.Equal(created) {
		t.Errorf("%s config: os %q arch %q user %q entrypoint %q cmd %q workdir %q created %v", arch, cf.OS, cf.Architecture,
			c.User, c.Entrypoint, c.Cmd, c.WorkingDir, cf.Created)
	}
	for k, want := range map[string]string{"org.opencontainers.image.version": "v9.9.9",
		"org.opencontainers.image.created": "2023-11-14T22:13:20Z", "org.opencontainers.image.source": sourceURL} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	if c.Labels["org.opencontainers.image.revision"] == "" {
		t.Error("no revision label")
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != name || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
		t.Errorf("layer entry %s mode %o owner %d:%d mtime %v", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime)
	}
	bin, _ := io.ReadAll(tr)
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("binary: %v", err)
	}
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if ef.Machine != wantMachine {
		t.Errorf("binary for %v, want %v", ef.Machine, wantMachine)
	}
	if interp := ef.Section(".interp"); interp != nil {
		t.Error("binary is dynamically linked")
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("layer has more than the binary: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr bool
		check   func(options) bool
	}{
		{args: nil, check: func(o options) bool {
			return slices.Equal(o.Images, defaultImages) && len(o.Platforms) == 2 && o.Repository == defaultRepository && o.Tag == ""
		}},
		{args: []string{"--image=pause=./hack/image/pause", "--repository=registry.k8s.io/", "--tag=3.10", "--platforms=linux/arm/v7"},
			check: func(o options) bool {
				return len(o.Images) == 1 && o.Images[0].Name == "pause" && o.Repository == "registry.k8s.io" &&
					o.Platforms[0] == platform{"linux", "arm", "v7"}
			}},
		{args: []string{"--image", "Bad=./x"}, wantErr: true},
		{args: []string{"--image", "noequals"}, wantErr: true},
		{args: []string{"--image", "a=./x", "--image", "a=./y"}, wantErr: true},
		{args: []string{"--platforms", "windows/amd64"}, wantErr: true},
		{args: []string{"--platforms", "linux/amd64,linux/amd64"}, wantErr: true},
		{args: []string{"--platforms", ""}, wantErr: true},
		{args: []string{"stray"}, wantErr: true},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args, io.Discard)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseFlags(%q) error %v, want error %v", tt.args, err, tt.wantErr)
			continue
		}
		if err == nil && !tt.check(o) {
			t.Errorf("parseFlags(%q) = %+v", tt.args, o)
		}
	}
}

func TestPlatformGoEnv(t *testing.T) {
	got := platform{"linux", "arm", "v7"}.goEnv()
	if !slices.Equal(got, []string{"GOOS=linux", "GOARCH=arm", "GOARM=7"}) {
		t.Errorf("goEnv = %q", got)
	}
}

// The revision label must not claim a clean commit for a changed tree;
// exercised on this checkout, whatever its state, against git itself.
func TestReadSourceRevision(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	s, err := readSource(context.Background(), repoRoot, "v1")
	if err != nil {
		t.Fatal(err)
	}
	head, err := git(context.Background(), repoRoot, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := git(context.Background(), repoRoot, "status", "--porcelain", "--untracked-files=no")
	want := head
	if status != "" {
		want += "-dirty"
	}
	if s.Revision != want {
		t.Errorf("revision %q, want %q", s.Revision, want)
	}
	ct, _ := git(context.Background(), repoRoot, "log", "-1", "--format=%cI", "HEAD")
	if wantTime, _ := time.Parse(time.RFC3339, ct); !s.Created.Equal(wantTime) {
		t.Errorf("created %v, want the commit time %v", s.Created, wantTime)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "not-a-number")
	if _, err := readSource(context.Background(), repoRoot, "v1"); err == nil {
		t.Error("a malformed SOURCE_DATE_EPOCH was accepted")
	}
}

// extract unpacks the tarball at path into dir, checking every entry is
// owned by 0:0 and dated 1700000000, and returns the entries' names in order.
func extract(t *testing.T, path, dir string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("entry %s: owner %d:%d, mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
