//go:build evalfiles

package controller

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// maxEvaluationFiles is issue 21's goal: the files one evaluation with no
// extension set executes, outside upstream's math and the fakes.
const maxEvaluationFiles = 15

// TestEvaluationFiles measures the files one evaluation runs through (issue
// 21; docs/benchmarks.md "One evaluation"): TestEvaluationPath's evaluation
// (that of TestPodsMetricScalesUp: one Pods metric, no extension), counting
// the blocks whose count grew from its subtest "built" alone to the whole
// test — as TestRequestPathHit measures the adapter's request — fakes and
// upstream's math (packages replicas and behavior) aside. It is a structure
// test; it runs go test twice with -coverpkg, so it sits behind a build tag:
//
//	go test -tags evalfiles -count=1 -run '^TestEvaluationFiles$' ./autoscaler/controller/
func TestEvaluationFiles(t *testing.T) {
	built := coverProfile(t, "^TestEvaluationPath$/^built$")
	whole := coverProfile(t, "^TestEvaluationPath$")
	files := grownFiles(t, built, whole)
	t.Logf("%d files run by one evaluation:\n%s", len(files), strings.Join(files, "\n"))
	if len(files) > maxEvaluationFiles {
		t.Errorf("one evaluation runs through %d files, want at most %d", len(files), maxEvaluationFiles)
	}
}

// TestEvaluationPath is the evaluation TestEvaluationFiles measures.
func TestEvaluationPath(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	t.Run("built", func(t *testing.T) {
		if f.build() == nil {
			t.Fatal("no controller")
		}
	})
	t.Run("evaluated", func(t *testing.T) {
		if _, err := f.sync(hpaKey); err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
			t.Fatalf("scale updates = %v, want [4]", got)
		}
	})
}

// coverProfile runs the tests run selects in this package with
// -coverpkg=./autoscaler/... and returns the counters, by block
// ("file:position").
func coverProfile(t *testing.T, run string) map[string]int {
	t.Helper()
	profile := filepath.Join(t.TempDir(), "profile.txt")
	cmd := exec.Command("go", "test", "-tags", "evalfiles", "-count=1", "-run", run,
		"-coverpkg=github.com/ebbflow/ebbflow/autoscaler/...", "-coverprofile="+profile, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test -run %s: %v\n%s", run, err, out)
	}
	fh, err := os.Open(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	blocks := map[string]int{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("profile line %q", line)
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			t.Fatalf("profile line %q: %v", line, err)
		}
		blocks[fields[0]] += n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// grownFiles are the files with a block whose count grew from before to
// after, fakes and upstream's math aside.
func grownFiles(t *testing.T, before, after map[string]int) []string {
	t.Helper()
	seen := map[string]bool{}
	for block, n := range after {
		file, _, _ := strings.Cut(block, ":")
		if n > before[block] && !strings.Contains(file, "/fake/") &&
			!strings.Contains(file, "/autoscaler/replicas/") && !strings.Contains(file, "/autoscaler/behavior/") {
			seen[file] = true
		}
	}
	if len(after) == 0 {
		t.Fatal("empty coverage profile")
	}
	out := make([]string, 0, len(seen))
	for file := range seen {
		out = append(out, file)
	}
	sort.Strings(out)
	return out
}
