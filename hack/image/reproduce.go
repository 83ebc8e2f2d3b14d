package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/internal/imagelayout"
)

// reproduce checks that o's images do not depend on where the checkout is or
// on what the Go build cache holds: it builds them at HEAD twice, in o.Dir
// with the environment's GOCACHE, and in a fresh clone of HEAD at another
// path (another depth and name) with an empty GOCACHE, then compares every
// digest: each image index, and per platform the manifest, config and
// layers. The module cache (GOMODCACHE) is shared: its zips are
// content-addressed and checked against go.sum. A tree whose tracked files
// differ from HEAD is refused (its images would be labelled "-dirty", the
// clone's not). Nothing is written to o.Output; the temporary directory is
// removed on return.
func reproduce(ctx context.Context, o options, stdout, stderr io.Writer) error {
	here, err := readSource(ctx, o.Dir, "")
	if err != nil {
		return err
	}
	if here.Revision == "unknown" || strings.HasSuffix(here.Revision, "-dirty") {
		return fmt.Errorf("%s is at %s: commit or stash the changes to tracked files (a clone of HEAD would build other images)", o.Dir, here.Revision)
	}
	tmp, err := os.MkdirTemp("", "ebbflow-reproduce-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	clone := filepath.Join(tmp, "clone", "at", "another", "path", "src")
	if err := cloneAt(ctx, o.Dir, clone, here.Revision); err != nil {
		return err
	}

	warm := o
	warm.Output = filepath.Join(tmp, "here")
	cold := o
	cold.Dir, cold.Output = clone, filepath.Join(tmp, "there")
	cold.Env = append(append([]string(nil), o.Env...), "GOCACHE="+filepath.Join(tmp, "gocache"))
	sides := []struct {
		what string
		o    options
	}{{"in " + o.Dir + " with the Go build cache", warm}, {"in a clone at " + clone + " with an empty GOCACHE", cold}}
	built := make([][]result, len(sides))
	for i, s := range sides {
		start := time.Now()
		if built[i], err = build(ctx, s.o, stderr); err != nil {
			return fmt.Errorf("build %s: %w", s.what, err)
		}
		fmt.Fprintf(stdout, "built %s: %s\n", s.what, time.Since(start).Round(time.Second))
	}
	if after, err := readSource(ctx, o.Dir, ""); err != nil || after.Revision != here.Revision {
		return fmt.Errorf("%s changed while building: %s, then %s (%v)", o.Dir, here.Revision, after.Revision, err)
	}
	// What a differing binary may hold: either checkout's path, the cold
	// side's GOCACHE.
	hints := []string{o.Dir, clone, filepath.Join(tmp, "gocache")}
	return compareBuilds(built[0], built[1], hints, stdout)
}

// cloneAt clones the repository at dir into dst, checked out at rev.
func cloneAt(ctx context.Context, dir, dst, rev string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if _, err := git(ctx, dir, "clone", "--quiet", "--no-checkout", "--no-hardlinks", dir, dst); err != nil {
		return err
	}
	_, err = git(ctx, dst, "checkout", "--quiet", "--detach", rev)
	return err
}

// compareBuilds prints every digest of the images a and b (built from the
// same options) and fails if any differs, naming each digest that differs
// and, for a config or a layer, what in it differs (explain; hints are
// paths a file that differs is searched for).
func compareBuilds(a, b []result, hints []string, stdout io.Writer) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d images, then %d", len(a), len(b))
	}
	var differ []string
	for i := range a {
		la, err := imagelayout.Read(a[i].Path)
		if err != nil {
			return err
		}
		lb, err := imagelayout.Read(b[i].Path)
		if err != nil {
			return err
		}
		ea, err := la.Entries()
		if err != nil {
			return err
		}
		eb, err := lb.Entries()
		if err != nil {
			return err
		}
		if len(ea) != len(eb) {
			differ = append(differ, fmt.Sprintf("%s: %d digests, then %d", a[i].Name, len(ea), len(eb)))
		}
		for j := range min(len(ea), len(eb)) {
			if ea[j] == eb[j] {
				fmt.Fprintf(stdout, "same %s %s %s\n", a[i].Name, ea[j].Role, ea[j].Digest)
				continue
			}
			differ = append(differ, fmt.Sprintf("%s %s: %s, then %s %s", a[i].Name, ea[j].Role, ea[j].Digest, eb[j].Role, eb[j].Digest))
			for _, d := range explain(la, lb, ea[j], eb[j], hints) {
				differ = append(differ, "    "+d)
			}
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("not reproducible:\n  %s", strings.Join(differ, "\n  "))
	}
	return nil
}

// maxExplained bounds the lines explain returns for one digest.
const maxExplained = 12

// explain says what differs between two blobs of the same role: for a
// config, each JSON field; for a layer, each file's tar header and content,
// with the first differing bytes and which hints the content holds. An
// index or manifest differs because what it names does: nothing is added.
func explain(la, lb *imagelayout.Layout, ea, eb imagelayout.Entry, hints []string) []string {
	if ea.Role != eb.Role {
		return nil
	}
	var lines []string
	switch {
	case strings.HasSuffix(ea.Role, " config"):
		a, errA := la.Blob(ea.Digest)
		b, errB := lb.Blob(eb.Digest)
		if errA != nil || errB != nil {
			return []string{fmt.Sprintf("unreadable: %v, %v", errA, errB)}
		}
		lines = jsonDiff(a, b)
	case strings.Contains(ea.Role, " layer "):
		fa, errA := la.LayerFiles(ea.Digest)
		fb, errB := lb.LayerFiles(eb.Digest)
		if errA != nil || errB != nil {
			return []string{fmt.Sprintf("unreadable: %v, %v", errA, errB)}
		}
		lines = layerDiff(fa, fb, hints)
	default:
		return nil
	}
	if len(lines) > maxExplained {
		lines = append(lines[:maxExplained], fmt.Sprintf("… and %d more", len(lines)-maxExplained))
	}
	return lines
}

// jsonDiff lists the fields (as paths: config.Labels.x, rootfs.diff_ids[0])
// whose values differ between the JSON documents a and b.
func jsonDiff(a, b []byte) []string {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return []string{"not JSON"}
	}
	fa, fb := map[string]string{}, map[string]string{}
	flattenJSON("", va, fa)
	flattenJSON("", vb, fb)
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		x, okA := fa[k]
		y, okB := fb[k]
		if okA && okB && x == y {
			continue
		}
		if !okA {
			x = "(absent)"
		}
		if !okB {
			y = "(absent)"
		}
		lines = append(lines, fmt.Sprintf("%s: %s, then %s", k, x, y))
	}
	return lines
}

func flattenJSON(prefix string, v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if prefix != "" {
				k = prefix + "." + k
			}
			flattenJSON(k, x, out)
		}
	case []any:
		for i, x := range v {
			flattenJSON(fmt.Sprintf("%s[%d]", prefix, i), x, out)
		}
	default:
		data, _ := json.Marshal(v)
		out[prefix] = string(data)
	}
}

// layerDiff lists the files of two layers that differ: missing on one side,
// tar header fields, content.
func layerDiff(fa, fb []imagelayout.LayerFile, hints []string) []string {
	byName := map[string]imagelayout.LayerFile{}
	for _, f := range fb {
		byName[f.Name] = f
	}
	var lines []string
	seen := map[string]bool{}
	for _, x := range fa {
		seen[x.Name] = true
		y, ok := byName[x.Name]
		if !ok {
			lines = append(lines, fmt.Sprintf("%s: only in the first", x.Name))
			continue
		}
		if x.Typeflag != y.Typeflag || x.Mode != y.Mode || x.UID != y.UID || x.GID != y.GID || !x.ModTime.Equal(y.ModTime) {
			lines = append(lines, fmt.Sprintf("%s: header type %c mode %o owner %d:%d time %s, then type %c mode %o owner %d:%d time %s",
				x.Name, x.Typeflag, x.Mode, x.UID, x.GID, x.ModTime.Format(time.RFC3339), y.Typeflag, y.Mode, y.UID, y.GID, y.ModTime.Format(time.RFC3339)))
		}
		if !bytes.Equal(x.Data, y.Data) {
			lines = append(lines, contentDiff(x.Name, x.Data, y.Data, hints)...)
		}
	}
	for _, y := range fb {
		if !seen[y.Name] {
			lines = append(lines, fmt.Sprintf("%s: only in the second", y.Name))
		}
	}
	return lines
}

// contentDiff describes two different contents of the file name: sizes and
// digests, the text around the first differing byte, and which hints each
// side holds (a binary that holds its checkout's path or a cache's).
func contentDiff(name string, a, b []byte, hints []string) []string {
	lines := []string{fmt.Sprintf("%s: %d bytes %s, then %d bytes %s", name, len(a), sha256Of(a), len(b), sha256Of(b))}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	if x, y := around(a, i), around(b, i); printable(x) && printable(y) {
		lines = append(lines, fmt.Sprintf("%s: first difference at byte %d: %q, then %q", name, i, x, y))
	} else {
		lines = append(lines, fmt.Sprintf("%s: first difference at byte %d (binary)", name, i))
	}
	for side, data := range [][]byte{a, b} {
		for _, h := range hints {
			if h != "" && bytes.Contains(data, []byte(h)) {
				lines = append(lines, fmt.Sprintf("%s: the %s holds the path %s (%d times)", name, []string{"first", "second"}[side], h, bytes.Count(data, []byte(h))))
			}
		}
	}
	return lines
}

// around returns up to 24 bytes of data before i and 40 from i.
func around(data []byte, i int) string {
	return string(data[max(0, i-24):min(len(data), i+40)])
}

// printable reports whether most of s is printable ASCII: worth quoting.
func printable(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x20 && s[i] < 0x7f || s[i] == '\n' || s[i] == '\t' {
			n++
		}
	}
	return n*4 >= len(s)*3
}

func sha256Of(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
