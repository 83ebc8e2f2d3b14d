package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fast subset's four specs as their JUnit names read.
var fastNames = []string{
	"[sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (scale resource: CPU) ReplicaSet light Should scale from 1 pod to 2 pods",
	"[sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (non-default behavior) with short downscale stabilization window should scale down soon after the stabilization period",
	"[sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (external metrics) should scale up and down based on external metric value",
	"[sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (scale to zero) should scale down to zero and back up",
}

// fastRun is a run of the fast subset where every spec passed, with exit
// code 0; edit returns it changed.
func fastRun(mode string, edit func(cs []testCase) []testCase) modeRun {
	var cs []testCase
	for _, n := range fastNames {
		cs = append(cs, testCase{Name: n, Status: "passed", spec: true})
	}
	if edit != nil {
		cs = edit(cs)
	}
	exit := 0
	for _, c := range cs {
		if c.Status != "passed" {
			exit = 1
		}
	}
	return modeRun{mode: mode, dir: "/out/" + mode, exit: exit, cases: cs}
}

func withStatus(i int, status, msg string) func([]testCase) []testCase {
	return func(cs []testCase) []testCase {
		cs[i].Status, cs[i].Message = status, msg
		return cs
	}
}

func TestVerdict(t *testing.T) {
	fast := expectation{patterns: fastFocus}
	failed := withStatus(1, "failed", "timeout waiting 3m0s for 1 replicas in horizontal-pod-autoscaling-8812 (rs-x7kdq) @ 11/27/26 18:53:20.553")
	tests := []struct {
		name string
		runs []modeRun
		want expectation
		err  string // "" wants no error
	}{
		{"all passed", []modeRun{fastRun(modeEbbflow, nil)}, fast, ""},
		{"no spec", []modeRun{{mode: modeEbbflow, exit: 1}}, fast, "ran no spec"},
		{"skipped", []modeRun{fastRun(modeEbbflow, withStatus(0, "skipped", "skipped - no metrics server"))}, fast, "skipped - no metrics server"},
		{"timed out", []modeRun{fastRun(modeEbbflow, withStatus(2, "timedout", "A suite timeout occurred"))}, fast, "timedout"},
		{"interrupted", []modeRun{fastRun(modeEbbflow, withStatus(3, "interrupted", "Interrupted by User"))}, fast, "interrupted"},
		{"renamed upstream", []modeRun{fastRun(modeEbbflow, func(cs []testCase) []testCase {
			cs[3].Name = "[sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (scale to nothing) should scale down to zero and back up"
			return cs
		})}, fast, `focus pattern "\\(scale to zero\\)`},
		{"count of the whole selection", []modeRun{fastRun(modeEbbflow, nil)}, expectation{count: hpaSpecs}, "4 specs ran, the focus selects 34"},
		{"exit code with every spec passed", []modeRun{func() modeRun { r := fastRun(modeEbbflow, nil); r.exit = 1; return r }()}, fast, "exited 1 with every spec"},
		{"exit 0 with a failure", []modeRun{func() modeRun { r := fastRun(modeEbbflow, failed); r.exit = 0; return r }()}, fast, "exited 0 with 1 specs not passed"},
		{"suite node failed", []modeRun{fastRun(modeEbbflow, func(cs []testCase) []testCase {
			return append(cs, testCase{Name: "[SynchronizedBeforeSuite]", Status: "failed", Message: "no nodes"})
		})}, fast, "[SynchronizedBeforeSuite] (failed: no nodes)"},
		{"failed, no baseline", []modeRun{fastRun(modeEbbflow, failed)}, fast, "stabilization period (failed"},
		{"failed, baseline passed", []modeRun{fastRun(modeEbbflow, failed), fastRun(modeKCM, nil)}, fast, "stabilization period (failed"},
		{"failed alike in both", []modeRun{fastRun(modeEbbflow, failed), fastRun(modeKCM,
			withStatus(1, "failed", "timeout waiting 3m0s for 1 replicas in horizontal-pod-autoscaling-311 (rs-bq2zm) @ 11/28/26 02:10:01.100"))}, fast, ""},
		{"failed otherwise in the baseline", []modeRun{fastRun(modeEbbflow, failed), fastRun(modeKCM,
			withStatus(1, "failed", "timeout waiting 3m0s for 2 replicas in horizontal-pod-autoscaling-311 (rs-bq2zm) @ 11/28/26 02:10:01.100"))}, fast, "for 1 replicas"},
		{"timed out in both", []modeRun{fastRun(modeEbbflow, withStatus(2, "timedout", "A suite timeout occurred")),
			fastRun(modeKCM, withStatus(2, "timedout", "A suite timeout occurred"))}, fast, "timedout"},
		{"baseline ran nothing", []modeRun{fastRun(modeEbbflow, failed), {mode: modeKCM, exit: 1}}, fast, "mode kcm ran no spec"},
		{"kcm alone, failed", []modeRun{fastRun(modeKCM, failed)}, fast, "kcm Horizontal pod autoscaling (non-default behavior)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := report{runs: tc.runs, want: tc.want}.verdict()
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("verdict %v, want none", err)
			case tc.err != "" && err == nil:
				t.Errorf("verdict none, want one with %q", tc.err)
			case tc.err != "" && !strings.Contains(err.Error(), tc.err):
				t.Errorf("verdict %v, want one with %q", err, tc.err)
			}
		})
	}
}

// TestVerdictOfJUnit judges a JUnit report as e2e.test writes it: the spec
// that failed and the one skipped for a reason fail the run, whatever the
// exit code says.
func TestVerdictOfJUnit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junit_01.xml")
	if err := os.WriteFile(p, []byte(sampleJUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := readJUnit(p)
	if err != nil {
		t.Fatal(err)
	}
	err = report{runs: []modeRun{{mode: modeEbbflow, exit: 1, cases: cases}}}.verdict()
	for _, want := range []string{"short downscale stabilization window should scale down soon after the stabilization period (failed: waited 3m0s",
		"[FeatureGate:PodLevelResources] Horizontal pod autoscaling x (skipped: skipped - feature gate PodLevelResources is off)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("verdict %v, want one with %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "Deployment should run") {
		t.Errorf("verdict %v names a spec the focus left out", err)
	}
}
