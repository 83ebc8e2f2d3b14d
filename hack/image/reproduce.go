package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	return compareBuilds(built[0], built[1], stdout)
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
// same options) and fails if any differs.
func compareBuilds(a, b []result, stdout io.Writer) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d images, then %d", len(a), len(b))
	}
	var differ []string
	for i := range a {
		ea, err := layoutEntries(a[i].Path)
		if err != nil {
			return err
		}
		eb, err := layoutEntries(b[i].Path)
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
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("not reproducible:\n  %s", strings.Join(differ, "\n  "))
	}
	return nil
}

func layoutEntries(path string) ([]imagelayout.Entry, error) {
	l, err := imagelayout.Read(path)
	if err != nil {
		return nil, err
	}
	return l.Entries()
}
