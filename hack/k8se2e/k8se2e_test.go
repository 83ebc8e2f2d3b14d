package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// A JUnit report as e2e.test --report-dir writes it (shortened): ginkgo
// lists every spec, those left out by the focus as skipped without a reason.
const sampleJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="1" time="300">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="4" skipped="2" failures="1" errors="0" time="300">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="0.02"></testcase>
    <testcase name="[ReportAfterSuite] [sig-testing] Log Check" classname="Kubernetes e2e suite" status="passed" time="0.01"></testcase>
    <testcase name="[It] [sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (scale resource: CPU) ReplicaSet light Should scale from 1 pod to 2 pods" classname="Kubernetes e2e suite" status="passed" time="111.95"></testcase>
    <testcase name="[It] [sig-autoscaling] [Feature:HPA] Horizontal pod autoscaling (non-default behavior) with short downscale stabilization window should scale down soon after the stabilization period" classname="Kubernetes e2e suite" status="failed" time="185.5">
      <failure message="" type="failed">[FAILED] waited 3m0s, wanted less than 2m30s&#xA;Expected&#xA;    &lt;int&gt;: 3&#xA;In [It] at: x.go:90 @ 11/27/26 18:53:20.553&#xA;</failure>
    </testcase>
    <testcase name="[It] [sig-apps] Deployment should run" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] [sig-autoscaling] [Feature:HPA] [FeatureGate:PodLevelResources] Horizontal pod autoscaling x" classname="Kubernetes e2e suite" status="skipped" time="0.1">
      <skipped message="skipped - feature gate PodLevelResources is off"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestReadJUnitAndReport(t *testing.T) {
	p := filepath.Join(t.TempDir(), "junit_01.xml")
	if err := os.WriteFile(p, []byte(sampleJUnit), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := readJUnit(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 {
		t.Fatalf("cases %+v, want the 3 HPA specs", cases)
	}
	if got := summary(cases); got != "1 failed, 1 passed, 1 skipped" {
		t.Errorf("summary %q", got)
	}
	if c := cases[1]; c.Status != "failed" || c.Message != "waited 3m0s, wanted less than 2m30s Expected <int>: 3" {
		t.Errorf("failed case %+v", c)
	}
	passedKCM := make([]testCase, len(cases))
	copy(passedKCM, cases)
	passedKCM[1].Status = "passed"
	r := report{runs: []modeRun{{mode: modeEbbflow, cases: cases}, {mode: modeKCM, cases: passedKCM}}}
	md := r.markdown()
	for _, want := range []string{"wanted less than 2m30s Expected <int>: 3\n", "| Horizontal pod autoscaling (non-default behavior) with short downscale stabilization window should scale down soon after the stabilization period | **failed**, 3m06s [1] | passed, 3m06s |",
		"1. ebbflow-autoscaler (drop-in), Horizontal pod autoscaling (non-default behavior)", "skipped - feature gate PodLevelResources is off"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

func TestListedImage(t *testing.T) {
	lines := []string{"gcr.io/k8s-authenticated-test/agnhost:2.6", "registry.k8s.io/e2e-test-images/agnhost:2.55",
		"registry.k8s.io/e2e-test-images/agnhost:2.66.1", "registry.k8s.io/e2e-test-images/resource-consumer:1.14"}
	if got, err := listedImage(lines, "agnhost"); err != nil || got != "registry.k8s.io/e2e-test-images/agnhost:2.66.1" {
		t.Errorf("agnhost: %q, %v", got, err)
	}
	if _, err := listedImage(lines[:2], "agnhost"); err == nil {
		t.Error("agnhost 2.66.1 not listed: no error")
	}
}

// TestWriteImage writes an image and reads it back as ctr would: the name,
// the platform, the entrypoint and the files with their directories.
func TestWriteImage(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("#!/bin/true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag("registry.k8s.io/e2e-test-images/resource-consumer:1.14")
	if err != nil {
		t.Fatal(err)
	}
	im := &testImage{ref: ref, files: []imgFile{{"consume-cpu/consume-cpu", src}, {"consumer", src}},
		cfg: v1.Config{Entrypoint: []string{"/consumer"}, WorkingDir: "/"}}
	p := filepath.Join(dir, "img.tar")
	if err := writeImage(p, im); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(p, &ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || cf.Config.Entrypoint[0] != "/consumer" {
		t.Errorf("config %+v", cf)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var names []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if got := strings.Join(names, " "); got != "consume-cpu/ consume-cpu/consume-cpu consumer" {
		t.Errorf("layer files %q", got)
	}
}

// TestChartValues keeps the values of each mode byte for byte
// (testdata/values-<mode>.yaml, written by the values before they were built
// from kit's).
func TestChartValues(t *testing.T) {
	for _, mode := range []string{modeEbbflow, modeKCM} {
		want, err := os.ReadFile(filepath.Join("testdata", "values-"+mode+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := kit.ChartValuesAt("10.0.0.1", 9090, chartOptions(mode)); got != string(want) {
			t.Errorf("%s: values differ from testdata:\n%s", mode, got)
		}
	}
}
