//go:build evalfiles

package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
	"github.com/ebbflow/ebbflow/test/coverfiles"
)

// maxEvaluationFiles is issue 21's goal: the files one evaluation with no
// extension set executes, outside upstream's math and the fakes.
const maxEvaluationFiles = 15

// coverPkg is what the profiles cover.
const coverPkg = "github.com/ebbflow/ebbflow/autoscaler/..."

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
	built := coverfiles.Counts(t, "evalfiles", "^TestEvaluationPath$/^built$", coverPkg)
	whole := coverfiles.Counts(t, "evalfiles", "^TestEvaluationPath$", coverPkg)
	files := coverfiles.Grown(built, whole, "/fake/", "/autoscaler/replicas/", "/autoscaler/behavior/")
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
