// Package coverfiles measures how many files of this module one code path
// runs through, from coverage profiles: the structure tests behind the build
// tags evalfiles (one evaluation, autoscaler/controller) and requestfiles
// (one adapter request, adapter/server) run a test twice — its set-up alone,
// then the whole — and count the files with a block whose count grew.
package coverfiles

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Module is this module's path, trimmed from the files Grown returns.
const Module = "github.com/ebbflow/ebbflow"

// Counts runs `go test -tags TAGS -run RUN -coverpkg=COVERPKG` on the package
// in the current directory and returns each block's execution count, by
// "file:position".
func Counts(t testing.TB, tags, run, coverpkg string) map[string]int {
	t.Helper()
	profile := filepath.Join(t.TempDir(), "cover.out")
	cmd := exec.Command("go", "test", "-tags", tags, "-count=1", "-run", run,
		"-coverpkg="+coverpkg, "-coverprofile="+profile, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -run %s: %v\n%s", run, err, out)
	}
	fh, err := os.Open(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	counts, err := parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) == 0 {
		t.Fatal("empty coverage profile")
	}
	return counts
}

// parse reads a coverage profile ("mode: …", then "file:pos statements count").
func parse(fh *os.File) (map[string]int, error) {
	counts := map[string]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, &lineError{line: line}
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, &lineError{line: line}
		}
		counts[fields[0]] += n
	}
	return counts, sc.Err()
}

type lineError struct{ line string }

func (e *lineError) Error() string { return "coverage profile line " + strconv.Quote(e.line) }

// Grown returns, sorted and without the module's prefix, the files with a
// block whose count grew from before to after, except those whose path
// contains one of skip (fakes, upstream's code).
func Grown(before, after map[string]int, skip ...string) []string {
	seen := map[string]bool{}
	for block, n := range after {
		file, _, _ := strings.Cut(block, ":")
		if n <= before[block] || containsAny(file, skip) {
			continue
		}
		seen[strings.TrimPrefix(file, Module+"/")] = true
	}
	out := make([]string, 0, len(seen))
	for file := range seen {
		out = append(out, file)
	}
	sort.Strings(out)
	return out
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
