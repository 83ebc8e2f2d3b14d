// Command k8se2e runs Kubernetes v1.37.2's own HPA end-to-end tests
// (k8s.io/kubernetes/test/e2e/autoscaling/horizontal_pod_autoscaling*.go,
// [sig-autoscaling] [Feature:HPA]) on the local cluster's real node twice,
// each on a fresh cluster of its own: first against ebbflow-autoscaler in
// drop-in mode (kube-controller-manager's HPA controller off, the chart
// installed from our images with autoscaler.hpaMode "all"), then against
// kube-controller-manager's own HPA controller (the chart without its
// autoscaler), and writes a side-by-side report of both runs' JUnit results.
//
// The e2e binary is hack/build-tools.sh's k8s-e2e (go test -c of
// k8s.io/kubernetes/test/e2e, from the Go module proxy); the images its HPA
// tests run (resource-consumer, agnhost) are built from the same module's
// sources and imported into the node's containerd: nothing is pulled.
//
// Usage (root: the real node):
//
//	go run ./hack/k8se2e [--fast] [--modes ebbflow,kcm] [--out _output/k8se2e]
//
// It exits non-zero unless every spec the focus selects ran and passed in
// drop-in mode, with e2e.test's exit code agreeing (verdict.go): a spec that
// failed is excused only when it failed the same way against
// kube-controller-manager; skipped, timed-out and interrupted specs are not.
// See docs/k8s-e2e.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// hpaFocus selects the tests of horizontal_pod_autoscaling*.go (34 in
// v1.37.2): every one is a SIGDescribe(feature.HPA, ..., "Horizontal pod
// autoscaling ..."), some with a [FeatureGate:...] label between the two.
const hpaFocus = `\[sig-autoscaling\] \[Feature:HPA\] .*Horizontal pod autoscaling`

// fastFocus is the subset of make test (about 12 minutes a mode): one CPU
// scale-up on light load, the short downscale stabilization window, and the
// two external-metrics tests with the metrics server they bring (scale up and
// down; to zero and back).
var fastFocus = []string{
	`ReplicaSet light Should scale from 1 pod to 2 pods`,
	`with short downscale stabilization window should scale down soon after the stabilization period`,
	`\(external metrics\) should scale up and down based on external metric value`,
	`\(scale to zero\) should scale down to zero and back up`,
}

// syncPeriod is kube-controller-manager's default HPA sync period, which the
// tests' timings assume; both controllers run with it (and every other HPA
// flag at its default).
const syncPeriod = 15 * time.Second

// Modes: who decides for the HPAs.
const (
	modeEbbflow = "ebbflow" // ebbflow-autoscaler, drop-in mode
	modeKCM     = "kcm"     // kube-controller-manager's HPA controller
)

type options struct {
	fast     bool
	images   bool // only build the test images
	rereport bool // only write the report again from the runs in out
	modes    []string
	out      string
	focus    string
	skip     string
	timeout  time.Duration
	nodes    int // real nodes (cluster.Options.ExtraRealNodes + 1)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := options{}
	var modes string
	flag.BoolVar(&o.fast, "fast", false, "run the fast subset (make test) instead of the whole selection")
	flag.BoolVar(&o.rereport, "report-only", false, "only write report.md again from the runs already in --out")
	flag.BoolVar(&o.images, "images-only", false, "only build the test images (tarballs in --out/images)")
	flag.StringVar(&modes, "modes", modeEbbflow+","+modeKCM, "comma-separated: ebbflow (drop-in mode), kcm (kube-controller-manager's HPA), in this order")
	flag.StringVar(&o.out, "out", "_output/k8se2e", "directory of the reports")
	flag.StringVar(&o.focus, "focus", "", "a ginkgo focus regexp of its own (default: the HPA tests, or the fast subset)")
	flag.StringVar(&o.skip, "skip", "", "a ginkgo skip regexp (e.g. the fast subset's specs, for a run beside it)")
	flag.IntVar(&o.nodes, "nodes", 0, "real nodes (1-4) on this machine, each a kubelet with its own containerd reporting the machine's CPUs; 0: 1 with --fast, else 3, which schedule the specs that scale to 5 or 7 pods of 500m on a 2-CPU machine beside the chart (docs/k8s-e2e.md)")
	flag.DurationVar(&o.timeout, "timeout", 4*time.Hour, "bound of each mode's e2e run (ginkgo's suite timeout: the spec it interrupts is reported timedout, the rest skipped)")
	flag.Parse()
	o.modes = strings.Split(modes, ",")
	if o.nodes == 0 {
		// 7 pods of 500m and the chart's 400m are 3.9 of two nodes' 4 CPUs.
		o.nodes = 3
		if o.fast {
			o.nodes = 1
		}
	}
	if o.nodes < 1 || o.nodes > 4 {
		fmt.Fprintf(os.Stderr, "k8se2e: --nodes %d: want 1 to 4\n", o.nodes)
		os.Exit(2)
	}
	for _, m := range o.modes {
		if m != modeEbbflow && m != modeKCM {
			fmt.Fprintf(os.Stderr, "k8se2e: unknown mode %q\n", m)
			os.Exit(2)
		}
	}
	if o.focus == "" {
		o.focus = hpaFocus
		if o.fast {
			o.focus = hpaFocus + `.*(` + strings.Join(fastFocus, "|") + `)`
		}
	}
	if err := run(ctx, o, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "k8se2e:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, log io.Writer) (err error) {
	t0 := time.Now()
	root, err := buildtools.RepoRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(o.out) {
		o.out = filepath.Join(root, o.out)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if o.rereport {
		rep := report{focus: o.focus, skip: o.skip, fast: o.fast, want: expectationFor(o)}
		for _, mode := range o.modes {
			r, err := readRun(filepath.Join(o.out, mode), mode)
			if err != nil {
				return err
			}
			rep.runs = append(rep.runs, r)
			rep.total += r.elapsed // the e2e runs only: the cluster's time is not recorded
		}
		return writeReport(rep, o.out, log)
	}
	e2eBin, err := buildtools.Path(ctx, log, "k8s-e2e")
	if err != nil {
		return err
	}
	listed, err := exec.CommandContext(ctx, e2eBin, "--list-images").Output()
	if err != nil {
		return fmt.Errorf("%s --list-images: %w", e2eBin, err)
	}
	tars, refs, err := buildTestImages(ctx, root, filepath.Join(o.out, "images"), strings.Split(string(listed), "\n"), log)
	if err != nil || o.images {
		return err
	}

	var runs []modeRun
	for _, mode := range o.modes {
		r, err := runMode(ctx, mode, e2eBin, tars, refs, o, log)
		if err != nil {
			return fmt.Errorf("mode %s: %w", mode, err)
		}
		runs = append(runs, r)
	}
	return writeReport(report{runs: runs, focus: o.focus, skip: o.skip, fast: o.fast, nodes: o.nodes,
		want: expectationFor(o), total: time.Since(t0)}, o.out, log)
}

// runMode starts a fresh cluster for mode (what one mode's run did to it
// cannot change the other's), installs the chart for it, runs e2e.test and
// stops the cluster.
func runMode(ctx context.Context, mode, e2eBin string, tars, refs []string, o options, log io.Writer) (r modeRun, err error) {
	env, err := kit.Start(ctx, kit.Options{
		Log:                  log,
		DisableHPAController: mode == modeEbbflow,
		HPASyncPeriod:        syncPeriod,
		ClusterDNS:           true,
		ExtraRealNodes:       o.nodes - 1,
	})
	if err != nil {
		return r, err
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop cluster: %w", stopErr))
		}
	}()
	for _, tar := range tars {
		if _, err := env.C.ImportImage(ctx, tar); err != nil {
			return r, err
		}
	}
	fmt.Fprintf(log, "k8se2e: mode %s: imported %s into the containerd of %d real node(s)\n", mode, strings.Join(refs, ", "), o.nodes)
	if err := env.RestrictedNamespace(ctx, kit.ChartNS); err != nil {
		return r, err
	}
	if _, err := env.InstallChart(ctx, env.ChartValuesWith(chartOptions(mode)), 5*time.Minute); err != nil {
		return r, err
	}
	if _, err := env.WaitAPIServicesAvailable(ctx, 3*time.Minute, kit.APIResource); err != nil {
		return r, err
	}
	return runE2E(ctx, env, e2eBin, mode, o, log)
}

// writeReport writes out/report.md, prints it and returns its verdict.
func writeReport(rep report, out string, log io.Writer) error {
	path := filepath.Join(out, "report.md")
	if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "k8se2e: report in %s\n", path)
	_, _ = io.WriteString(log, rep.markdown())
	return rep.verdict()
}

// readRun reads a mode's run back from its directory: the JUnit report and
// the RUN file runE2E writes (elapsed time and exit code).
func readRun(dir, mode string) (modeRun, error) {
	r := modeRun{mode: mode, dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "RUN"))
	if err != nil {
		return r, err
	}
	var secs float64
	if _, err := fmt.Sscanf(string(data), "elapsed=%g exit=%d", &secs, &r.exit); err != nil {
		return r, fmt.Errorf("%s/RUN: %w", dir, err)
	}
	r.elapsed = time.Duration(secs * float64(time.Second))
	r.cases, err = readJUnit(filepath.Join(dir, "junit_01.xml"))
	return r, err
}

// resourceWindow is the window of the CPU rate. The kubelet stamps a
// container's CPU counter with the time of its cAdvisor housekeeping, up to
// 15 s apart for an idle container, so kit's 30 s window often holds one
// sample and the pod has no metric (a run with 30 s saw one to three of
// three consumer pods with a rate at 15 s steps, and
// kube-controller-manager, counting the missing pods at 100 % of the target
// on a scale-down, held three replicas).
const resourceWindow = 45 * time.Second

// chartOptions: kit's values (Prometheus of the cluster, metrics.k8s.io from
// the kubelet's /metrics/resource, the tests' Resource metrics; the same for
// both modes) with CPU as a rate over resourceWindow, no custom or external
// rules nor APIServices (the external-metrics tests register
// v1beta1.external.metrics.k8s.io for their own server), and in drop-in
// mode the autoscaler with hpaMode "all" and every flag at its default
// (kube-controller-manager's), in kcm mode no autoscaler.
func chartOptions(mode string) kit.ChartOptions {
	o := kit.ChartOptions{
		Autoscaler:     "\n  hpaMode: \"all\"\n  autoscalers: false\n",
		NoAPIService:   true,
		ResourceWindow: resourceWindow,
	}
	if mode == modeKCM {
		o.Autoscaler = " {enabled: false}\n"
	}
	return o
}

// modeRun is one mode's e2e run.
type modeRun struct {
	mode    string
	dir     string
	elapsed time.Duration
	exit    int // e2e.test's exit code
	cases   []testCase
}

// runE2E runs e2e.test against the cluster with o.focus and reads its JUnit
// report.
func runE2E(ctx context.Context, env *kit.Env, bin, mode string, o options, log io.Writer) (modeRun, error) {
	dir := filepath.Join(o.out, mode)
	if err := os.RemoveAll(dir); err != nil {
		return modeRun{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return modeRun{}, err
	}
	logFile, err := os.Create(filepath.Join(dir, "e2e.log"))
	if err != nil {
		return modeRun{}, err
	}
	defer logFile.Close()
	args := []string{
		"--kubeconfig=" + env.C.AdminKubeconfig(),
		"--provider=local",
		"--kubectl-path=" + env.C.Kubectl(),
		"--report-dir=" + dir,
		"--e2e-output-dir=" + dir,
		"--disable-log-dump",
		"--ginkgo.focus=" + o.focus,
		"--ginkgo.timeout=" + o.timeout.String(),
		// The same order in both modes (ginkgo shuffles top-level containers
		// by its seed), so that a time-bounded run covers the same specs.
		"--ginkgo.seed=1",
		"--ginkgo.v",
		"--ginkgo.no-color",
	}
	if o.skip != "" {
		args = append(args, "--ginkgo.skip="+o.skip)
	}
	fmt.Fprintf(log, "k8se2e: mode %s: %s %s\n", mode, bin, strings.Join(args, " "))
	t0 := time.Now()
	// e2e.test leaves files of its own (test-kuberc*) in TMPDIR: it gets a
	// directory of the run's, removed when it ends.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return modeRun{}, err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = time.Minute
	runErr := cmd.Run()
	r := modeRun{mode: mode, dir: dir, elapsed: time.Since(t0)}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exitErr):
		r.exit = exitErr.ExitCode()
	default:
		return r, fmt.Errorf("run e2e.test: %w", runErr)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	if err := os.WriteFile(filepath.Join(dir, "RUN"), fmt.Appendf(nil, "elapsed=%.0f exit=%d\n", r.elapsed.Seconds(), r.exit), 0o644); err != nil {
		return r, err
	}
	r.cases, err = readJUnit(filepath.Join(dir, "junit_01.xml"))
	if err != nil {
		return r, fmt.Errorf("%w (e2e.test exited %d; its log: %s)", err, r.exit, logFile.Name())
	}
	fmt.Fprintf(log, "k8se2e: mode %s: %s in %v (exit %d)\n", mode, summary(r.cases), r.elapsed.Round(time.Second), r.exit)
	return r, nil
}
