//go:build benchcluster

package benchcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/app"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/metricsstub"
)

// TestBenchCluster: see README of `make bench-cluster` in docs/benchmarks.md.
//
// Environment (all optional): EBBFLOW_BENCH_N (comma-separated, default
// "200,1000"), EBBFLOW_BENCH_VARIANTS ("steady,scaling"), EBBFLOW_BENCH_WORKERS
// ("5,50"), EBBFLOW_BENCH_WARMUP (15s), EBBFLOW_BENCH_WINDOW (45s),
// EBBFLOW_BENCH_DELAY (100ms, the metrics API's latency),
// EBBFLOW_BENCH_SCALING_UP_TO (the scaling variant only for N up to it),
// EBBFLOW_BENCH_SETUP_QPS (kube-controller-manager's --kube-api-qps while
// the workload is created, default 0: its own default of 20; its Deployment
// and ReplicaSet controllers then need about N/4 seconds),
// EBBFLOW_BENCH_CONTROLLERS (comma-separated ids of the contenders to run:
// kcm-default, kcm-w<W>, ebbflow-w<W>, ebbflow-default; default all).
//
// kube-apiserver writes an audit log throughout (cluster.Options.AuditLog),
// from which each controller's requests to it are counted.
func TestBenchCluster(t *testing.T) {
	cfg := configFromEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Minute)
	defer cancel()
	values, reads := &Values{}, &ReadLog{}
	stub, err := metricsstub.Start(metricsstub.Options{
		Delay: cfg.delay,
		Value: func(_ metricsstub.Question, now time.Time) (int64, bool) { return values.Milli(now), true },
		Observe: func(q metricsstub.Question, at time.Time) {
			reads.Observe(q.Metric, q.Selector.String(), at)
		},
		DNSNames: []string{cluster.ExternalMetricsStubDNSName},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	opts := cluster.Options{RulesYAML: []byte(rulesYAML), HPASyncPeriod: syncPeriod, DisableHPAController: true, AuditLog: true}
	if testing.Verbose() {
		opts.Log = os.Stdout
	}
	c := cluster.StartT(t, opts)
	if err := c.RegisterExternalMetricsAPI(ctx, stub.Port(), stub.CABundle()); err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, c: c, stub: stub, values: values, reads: reads, cfg: cfg}
	var report strings.Builder
	fmt.Fprintf(&report, "# bench-cluster %s, nproc %d, load average %s, metrics API delay %v, warm-up %v, window %v\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage(), cfg.delay, cfg.warmup, cfg.window)
	cts := contenders(cfg.workers, cfg.controllers)
	for _, n := range cfg.ns {
		ns := fmt.Sprintf("bench-%d", n)
		times, err := r.setUp(ctx, ns, n)
		line := fmt.Sprintf("N=%d: created %d Deployments and %d HPAs in %v; every Deployment reported its replica %v later (kube-controller-manager %s)",
			n, n, n, times.create.Round(time.Second), times.ready.Round(time.Second), setupQPSNote(cfg.setupQPS))
		if err != nil {
			line = fmt.Sprintf("N=%d: created in %v, then: %v", n, times.create.Round(time.Second), err)
		}
		fmt.Fprintf(&report, "%s\n\n", line)
		t.Log(line)
		if err != nil {
			writeReport(t, report.String())
			t.Fatal(err)
		}
		for _, variant := range cfg.variants {
			if variant == "scaling" && n > cfg.scalingUpTo {
				continue
			}
			var results []Result
			for _, ct := range cts {
				res, err := r.run(ctx, ns, n, ct, variant == "scaling")
				if err != nil {
					writeReport(t, report.String())
					t.Fatalf("N=%d %s %s: %v", n, variant, ct.name, err)
				}
				results = append(results, res)
			}
			table := Table(results, kcmDefaultName) + "\nRequests to kube-apiserver per evaluation (audit log, by the controller's identity):\n\n" + APITable(results)
			fmt.Fprintf(&report, "## N=%d, %s (ended %s, load average %s)\n\n%s\n", n, variant, time.Now().UTC().Format(time.TimeOnly), loadAverage(), table)
			t.Logf("N=%d, %s:\n%s", n, variant, table)
		}
		if err := deleteNamespace(ctx, c.Client(), ns); err != nil {
			t.Fatal(err)
		}
	}
	writeReport(t, report.String())
}

// writeReport writes the report so far to _output/bench/cluster-<UTC time>.md.
func writeReport(t *testing.T, report string) {
	out := filepath.Join(buildtools.MustRepoRoot(t), "_output", "bench", "cluster-"+time.Now().UTC().Format("20060102T150405Z")+".md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil {
		_ = os.WriteFile(out, []byte(report), 0o644)
		t.Logf("report: %s", out)
	}
}

const syncPeriod = 15 * time.Second // both controllers' default

// rulesYAML gives the adapter a custom-metrics rule only: the external
// metrics API is the stub's.
const rulesYAML = `
rules:
- seriesQuery: 'bench_unused{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

type config struct {
	ns, workers           []int
	controllers           []string // contender ids; empty: all
	setupQPS              int      // kube-controller-manager's --kube-api-qps during set-up; 0: default
	scalingUpTo           int
	variants              []string
	warmup, window, delay time.Duration
}

func configFromEnv(t *testing.T) config {
	ints := func(name, def string) []int {
		var out []int
		for _, s := range strings.Split(envOr(name, def), ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || v <= 0 {
				t.Fatalf("%s: %q is not a positive integer", name, s)
			}
			out = append(out, v)
		}
		return out
	}
	durOf := func(name, def string) time.Duration {
		d, err := time.ParseDuration(envOr(name, def))
		if err != nil || d <= 0 {
			t.Fatalf("%s: want a positive duration", name)
		}
		return d
	}
	cfg := config{
		ns: ints("EBBFLOW_BENCH_N", "200,1000"), workers: ints("EBBFLOW_BENCH_WORKERS", "5,50"),
		variants: strings.Split(envOr("EBBFLOW_BENCH_VARIANTS", "steady,scaling"), ","),
		warmup:   durOf("EBBFLOW_BENCH_WARMUP", "15s"), window: durOf("EBBFLOW_BENCH_WINDOW", "45s"),
		delay:       durOf("EBBFLOW_BENCH_DELAY", "100ms"),
		scalingUpTo: ints("EBBFLOW_BENCH_SCALING_UP_TO", "1000000")[0],
	}
	if v := os.Getenv("EBBFLOW_BENCH_SETUP_QPS"); v != "" {
		cfg.setupQPS = ints("EBBFLOW_BENCH_SETUP_QPS", "")[0]
	}
	if v := os.Getenv("EBBFLOW_BENCH_CONTROLLERS"); v != "" {
		for _, id := range strings.Split(v, ",") {
			cfg.controllers = append(cfg.controllers, strings.TrimSpace(id))
		}
		if len(contenders(cfg.workers, cfg.controllers)) != len(cfg.controllers) {
			var ids []string
			for _, ct := range contenders(cfg.workers, nil) {
				ids = append(ids, ct.id)
			}
			t.Fatalf("EBBFLOW_BENCH_CONTROLLERS: %q names a controller that is not one of %s", v, strings.Join(ids, ","))
		}
	}
	for _, v := range cfg.variants {
		if v != "steady" && v != "scaling" {
			t.Fatalf("EBBFLOW_BENCH_VARIANTS: %q is neither steady nor scaling", v)
		}
	}
	return cfg
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// contender is one controller with its settings.
type contender struct {
	id   string // for EBBFLOW_BENCH_CONTROLLERS
	name string
	kcm  bool
	args []string
}

// kcmDefault is kube-controller-manager's
// --concurrent-horizontal-pod-autoscaler-syncs default.
const kcmDefault = 5

// kcmDefaultName names the baseline of the ratios.
var kcmDefaultName = fmt.Sprintf("kcm w=%d (default)", kcmDefault)

// contenders: kube-controller-manager at its default (first: the baseline)
// and at each worker count, ebbflow-autoscaler at each worker count and at
// its defaults; only those whose id is in only, unless only is empty.
func contenders(workers []int, only []string) []contender {
	ebbDefault := app.NewOptions().Workers
	all := []contender{{id: "kcm-default", name: kcmDefaultName, kcm: true}}
	for _, w := range workers {
		if w != kcmDefault {
			all = append(all, contender{id: fmt.Sprintf("kcm-w%d", w), name: fmt.Sprintf("kcm w=%d", w), kcm: true,
				args: []string{"--concurrent-horizontal-pod-autoscaler-syncs=" + strconv.Itoa(w)}})
		}
	}
	for _, w := range workers {
		if w != ebbDefault {
			all = append(all, contender{id: fmt.Sprintf("ebbflow-w%d", w), name: fmt.Sprintf("ebbflow w=%d", w), args: []string{"--workers=" + strconv.Itoa(w)}})
		}
	}
	all = append(all, contender{id: "ebbflow-default", name: fmt.Sprintf("ebbflow w=%d (default)", ebbDefault)})
	if len(only) == 0 {
		return all
	}
	var out []contender
	for _, ct := range all {
		if slices.Contains(only, ct.id) {
			out = append(out, ct)
		}
	}
	return out
}

func setupQPSNote(qps int) string {
	if qps == 0 {
		return "at its default --kube-api-qps 20"
	}
	return fmt.Sprintf("at --kube-api-qps %d during the set-up only", qps)
}

// loadAverage returns the 1, 5 and 15 minute load averages ("?" if
// unknown).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}
