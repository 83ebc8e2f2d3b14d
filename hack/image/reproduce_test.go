package main

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/internal/imagelayout"
)

// The short form of `make verify-images` (see docs/images.md for why this
// much): the pause image (a main package of this module, standard library
// only) for both platforms, built at HEAD in one clone with the Go build
// cache as it is and in another clone, at another path and depth, with an
// empty GOCACHE; every digest must be the same. Both sides are clones of
// HEAD, so that the test does not depend on this checkout's uncommitted
// changes.
func TestReproducibleAcrossPathAndCache(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	// Stop the builds before go test's -timeout would kill this process and
	// leave them running.
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	here := cloneHead(ctx, t)
	o, err := parseFlags([]string{"-C", here, "--reproduce", "--image", "pause=./hack/image/pause",
		"--platforms", "linux/amd64,linux/arm64", "--tag", "v9.9.9"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := reproduce(ctx, o, &out, os.Stderr); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// index, then per platform manifest, config and one layer
	if n := strings.Count(out.String(), "\nsame pause "); n != 7 {
		t.Errorf("%d digests compared, want 7:\n%s", n, out.String())
	}
	t.Log(out.String())
}

// cloneHead clones this checkout's HEAD into a new directory and returns it.
func cloneHead(ctx context.Context, t *testing.T) string {
	t.Helper()
	head, err := git(ctx, repoRoot, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ebbflow")
	if err := cloneAt(ctx, repoRoot, dir, head); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A checkout with changes to tracked files is refused: its images would be
// labelled "-dirty" and the clone's not.
func TestReproduceRefusesDirtyTree(t *testing.T) {
	ctx := context.Background()
	dir := cloneHead(ctx, t)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"-C", dir, "--reproduce", "--image", "pause=./hack/image/pause", "--platforms", "linux/amd64"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = reproduce(ctx, o, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-dirty") {
		t.Errorf("reproduce in a changed tree: %v, want a refusal naming the -dirty revision", err)
	}
}

// The comparison names every digest that differs: here two builds at
// different SOURCE_DATE_EPOCHs, whose configs and layers (file times) and so
// manifests and indexes differ on both platforms; and what in a config or a
// layer differs (the field created, the file's time).
func TestCompareBuildsNamesDifferences(t *testing.T) {
	a, _ := buildTiny(t, "1700000000")
	b, _ := buildTiny(t, "1700000001")
	err := compareBuilds(a, b, nil, io.Discard)
	if err == nil {
		t.Fatal("builds at different times compared equal")
	}
	for _, want := range []string{"pause index: ", "tiny index: ", "pause linux/amd64 manifest: ", "tiny linux/arm64 config: ", "pause linux/arm64 layer 0: ",
		`created: "2023-11-14T22:13:20Z", then "2023-11-14T22:13:21Z"`, "time 2023-11-14T22:13:20Z, then type 0 mode 755 owner 0:0 time 2023-11-14T22:13:21Z"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}
	if err := compareBuilds(a, a, nil, io.Discard); err != nil {
		t.Errorf("a build compared with itself: %v", err)
	}
}

// imagelayout, which the comparison and test/imagetest read the tarballs
// with, finds in them what build wrote: 7 digests for two platforms, each
// platform's binary, and nothing that is not there.
func TestImageLayoutReadsWhatBuildWrote(t *testing.T) {
	results, _ := buildTiny(t, "1700000000")
	for _, r := range results {
		l, err := imagelayout.Read(r.Path)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := l.Entries()
		if err != nil || len(entries) != 7 || entries[0].Role != "index" || entries[0].Digest != r.Digest {
			t.Errorf("%s: entries %v, %v; want 7, the first the index %s", r.Name, entries, err, r.Digest)
		}
		for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
			bin, err := l.File("linux/"+arch, "/"+r.Name)
			if err != nil {
				t.Fatalf("%s for %s: %v", r.Name, arch, err)
			}
			if ef, err := elf.NewFile(bytes.NewReader(bin)); err != nil || ef.Machine != machine {
				t.Errorf("%s for %s: not an ELF binary for %v (%v)", r.Name, arch, machine, err)
			}
		}
		if _, err := l.File("linux/arm64", "/other"); err == nil {
			t.Errorf("%s: a file that is not in the layer was found", r.Name)
		}
		if _, err := l.File("linux/s390x", "/"+r.Name); err == nil {
			t.Errorf("%s: a platform that is not in the index was found", r.Name)
		}
	}
}

// A file whose content differs is described by its sizes and digests, the
// bytes where it first differs, and the paths (the checkouts', the cache's)
// each side holds: a binary built without -trimpath holds its checkout's.
func TestContentDiffNamesPaths(t *testing.T) {
	a := []byte("\x7fELF\x00/work/here/cmd/x/main.go\x00")
	b := []byte("\x7fELF\x00/tmp/r/clone/src/cmd/x/main.go\x00")
	got := strings.Join(contentDiff("x", a, b, []string{"/work/here", "/tmp/r/clone/src", "/tmp/r/gocache"}), "\n")
	for _, want := range []string{"x: 30 bytes sha256:", "then 36 bytes sha256:", `first difference at byte 6: "\x7fELF\x00/work/here`,
		"the first holds the path /work/here (1 times)", "the second holds the path /tmp/r/clone/src (1 times)"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "gocache") {
		t.Errorf("names a path neither side holds:\n%s", got)
	}
}
