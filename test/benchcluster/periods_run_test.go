//go:build benchcluster

package benchcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// The sync-period bench's metric: one series per autoscaler, served by
// ebbflow-adapter as an External metric (sum by queue).
const (
	periodsGauge = "bench_period_queue"
	periodsRules = `
externalRules:
- seriesQuery: 'bench_period_queue{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`
	periodsNS = "periods"
)

// TestBenchSyncPeriods measures what per-autoscaler sync periods cost on the
// local cluster (issue 22 §2): EBBFLOW_PERIODS_N Autoscalers (default 300)
// split evenly across EBBFLOW_PERIODS (default "5s,15s,60s"), each on a
// Deployment of one replica and an External metric of its own (its queue's
// series, at its target: steady state) read from a real Prometheus through
// kube-apiserver's aggregation and ebbflow-adapter, evaluated by
// ebbflow-autoscaler as a host process. After EBBFLOW_PERIODS_WARMUP
// (default the longest period + 10 s: every autoscaler's first evaluation,
// which writes its status, is over), a window of EBBFLOW_PERIODS_WINDOW
// (default two longest periods) between two snapshots: evaluations,
// external-metrics reads at ebbflow-adapter (its own request histogram), the autoscaler's requests
// (audit log, by its user), CPU from /proc. Report in
// _output/bench/sync-periods-<time>.md; `make bench-sync-periods`.
func TestBenchSyncPeriods(t *testing.T) {
	n, err := strconv.Atoi(envOr("EBBFLOW_PERIODS_N", "300"))
	if err != nil {
		t.Fatalf("EBBFLOW_PERIODS_N: %v", err)
	}
	periods, err := ParsePeriods(envOr("EBBFLOW_PERIODS", "5s,15s,60s"))
	if err != nil {
		t.Fatalf("EBBFLOW_PERIODS: %v", err)
	}
	groups, err := SplitPeriods(n, periods)
	if err != nil {
		t.Fatalf("EBBFLOW_PERIODS_N, EBBFLOW_PERIODS: %v", err)
	}
	warmup := envDuration(t, "EBBFLOW_PERIODS_WARMUP", MaxPeriod(groups)+10*time.Second)
	window := envDuration(t, "EBBFLOW_PERIODS_WINDOW", 2*MaxPeriod(groups))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute+warmup+window)
	defer cancel()

	e := exporter.New()
	e.Start(t)
	for i := range n {
		e.SetGauge(periodsGauge, map[string]string{"queue": queueName(i)}, TargetPerReplica)
	}
	opts := cluster.Options{
		Nodes: 1, RulesYAML: []byte(periodsRules), AuditLog: true,
		PrometheusTargets: []promtest.Target{{Addr: e.Addr(), Job: "periods", HonorLabels: true}},
	}
	if testing.Verbose() {
		opts.Log = os.Stdout
	}
	c := cluster.StartT(t, opts)
	if err := waitExternalMetric(ctx, c, queueName(n-1)); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAutoscaler(ctx, cluster.AutoscalerOptions{}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	t0 := time.Now()
	if err := createPeriodWorkload(ctx, c, groups); err != nil {
		t.Fatal(err)
	}
	created := time.Since(t0)
	t.Logf("created %d Deployments and Autoscalers (%s), every Deployment reporting its replica, in %v; warm-up %v, window %v", n, Mix(groups), created.Round(time.Second), warmup, window)
	if err := sleep(ctx, warmup); err != nil {
		t.Fatal(err)
	}
	before, err := periodSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sleep(ctx, window); err != nil {
		t.Fatal(err)
	}
	after, err := periodSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sleep(ctx, auditGrace); err != nil {
		t.Fatal(err)
	}
	counts, err := CountAuditDir(c.AuditLogDir(), []string{EbbflowUser}, before.at, after.at)
	if err != nil {
		t.Fatal(err)
	}
	external := map[string]string{"group": "external.metrics.k8s.io"}
	evals, reads := "ebbflow_autoscaler_reconcile_duration_seconds", "ebbflow_adapter_api_request_duration_seconds"
	res := PeriodResult{
		Groups: groups, Window: after.at.Sub(before.at),
		Evals:       after.autoscaler.Sum(evals, nil) - before.autoscaler.Sum(evals, nil),
		EvalTime:    meanBetween(before.autoscaler, after.autoscaler, evals),
		MetricReads: after.adapter.Sum(reads, external) - before.adapter.Sum(reads, external),
		APIRequests: counts.ByCategory(EbbflowUser),
		CPU:         after.procs[cluster.Autoscaler].CPU - before.procs[cluster.Autoscaler].CPU,
		AdapterCPU:  after.procs[cluster.Adapter].CPU - before.procs[cluster.Adapter].CPU,
		APIServerCPU: after.procs[cluster.KubeAPIServer].CPU -
			before.procs[cluster.KubeAPIServer].CPU,
		RSS: after.procs[cluster.Autoscaler].RSS,
	}
	table := PeriodTable([]PeriodResult{res})
	t.Logf("requests of %s by kind: %v\n%s", EbbflowUser, res.APIRequests, table)
	report := fmt.Sprintf("# bench-sync-periods %s, nproc %d, load average %s, %d autoscalers created in %v, warm-up %v, window %v\n\n%s",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage(), n, created.Round(time.Second), warmup, res.Window.Round(time.Millisecond), table)
	out := filepath.Join(buildtools.MustRepoRoot(t), "_output", "bench", "sync-periods-"+time.Now().UTC().Format("20060102T150405Z")+".md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil && os.WriteFile(out, []byte(report), 0o644) == nil {
		t.Logf("report: %s", out)
	}
	// Each evaluation reads the metric once, and each autoscaler is
	// evaluated again one period after its evaluation ended: the reads and
	// evaluations of a window are Σ 1/(period + mean evaluation time),
	// within one evaluation per autoscaler for the window's edges.
	due := DueRateAfter(groups, res.EvalTime) * res.Window.Seconds()
	for what, got := range map[string]float64{"evaluations": res.Evals, "external metrics reads": res.MetricReads, "metrics API requests (audit)": float64(res.APIRequests[CatMetrics])} {
		if got < due-float64(n) || got > due+float64(n) {
			t.Errorf("%s in the window: %.0f, want Σ 1/(period + mean evaluation time) × window = %.0f ± %d", what, got, due, n)
		}
	}
}

// meanBetween is the mean of histogram name's observations between two
// scrapes.
func meanBetween(before, after Scrape, name string) time.Duration {
	sum := func(s Scrape) (float64, float64) {
		var total, n float64
		for _, m := range s[name].GetMetric() {
			total += m.GetHistogram().GetSampleSum()
			n += float64(m.GetHistogram().GetSampleCount())
		}
		return total, n
	}
	s0, n0 := sum(before)
	s1, n1 := sum(after)
	if n1 <= n0 {
		return 0
	}
	return time.Duration((s1 - s0) / (n1 - n0) * float64(time.Second))
}

// queueName is autoscaler i's queue (and the name of it and its Deployment).
func queueName(i int) string { return fmt.Sprintf("w%05d", i) }

// waitExternalMetric waits until the adapter serves queue's series (its
// discovery relists every 10 s).
func waitExternalMetric(ctx context.Context, c *cluster.Cluster, queue string) error {
	_, ext, err := c.MetricsClients()
	if err != nil {
		return err
	}
	sel := labels.SelectorFromSet(labels.Set{"queue": queue})
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		l, err := ext.NamespacedMetrics(periodsNS).List(periodsGauge, sel)
		last = err
		return err == nil && len(l.Items) == 1, nil
	})
	if err != nil {
		return fmt.Errorf("the adapter does not serve %s{queue=%q} after a minute: %v", periodsGauge, queue, last)
	}
	return nil
}

// createPeriodWorkload creates namespace periodsNS with, for each group, its
// Count Deployments (benchcluster's Objects) and Autoscalers at its period:
// one External metric, its own queue, AverageValue TargetPerReplica, 1–10
// replicas; then waits until every Deployment reports its replica.
func createPeriodWorkload(ctx context.Context, c *cluster.Cluster, groups []PeriodGroup) error {
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ebb, err := ebbclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: periodsNS}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", periodsNS, err)
	}
	var periods []time.Duration
	for _, g := range groups {
		for range g.Count {
			periods = append(periods, g.Period)
		}
	}
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(periods); i += 8 {
				d, _ := Objects(periodsNS, i)
				if _, err := cs.AppsV1().Deployments(periodsNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("deployment %s: %w", d.Name, err)
					return
				}
				if _, err := ebb.AutoscalingV1alpha1().Autoscalers(periodsNS).Create(ctx, periodAutoscaler(i, periods[i]), metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("autoscaler %s: %w", d.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	// kube-controller-manager creates the ReplicaSets and pods at its own
	// pace: the window starts once it is done.
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, workloadTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.AppsV1().Deployments(periodsNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range list.Items {
			if d.Status.Replicas != 1 {
				return false, nil
			}
		}
		return len(list.Items) == len(periods), nil
	})
}

// periodAutoscaler is autoscaler i, evaluated every period.
func periodAutoscaler(i int, period time.Duration) *v1alpha1.Autoscaler {
	name := queueName(i)
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
		MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: periodsGauge, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": name}}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(TargetPerReplica, resource.DecimalSI)},
		}}},
	}
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: periodsNS}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.SyncPeriodSeconds = ptr.To(int32(period / time.Second))
	return a
}

// periodSnapshot is what TestBenchSyncPeriods reads at each end of its
// window.
type periodSnapshot struct {
	at                  time.Time
	autoscaler, adapter Scrape
	procs               map[string]ProcSample
}

func periodSnap(ctx context.Context, c *cluster.Cluster) (periodSnapshot, error) {
	s := periodSnapshot{at: time.Now(), procs: map[string]ProcSample{}}
	text, err := c.AutoscalerMetrics(ctx)
	if err != nil {
		return s, err
	}
	if s.autoscaler, err = ParseScrape(text); err != nil {
		return s, err
	}
	if text, err = adapterMetrics(ctx, c); err != nil {
		return s, err
	}
	if s.adapter, err = ParseScrape(text); err != nil {
		return s, err
	}
	for _, comp := range []string{cluster.Autoscaler, cluster.Adapter, cluster.KubeAPIServer} {
		pid, err := c.Pid(comp)
		if err != nil {
			return s, err
		}
		if s.procs[comp], err = ReadProc(pid); err != nil {
			return s, err
		}
	}
	return s, nil
}

// adapterMetrics is ebbflow-adapter's /metrics, asked directly with the
// cluster admin's client certificate.
func adapterMetrics(ctx context.Context, c *cluster.Cluster) (string, error) {
	admin := c.RESTConfig()
	pair, err := tls.X509KeyPair(admin.CertData, admin.KeyData)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.AdapterCA()) {
		return "", errors.New("the adapter's CA holds no certificate")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdapterURL()+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("adapter /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("adapter /metrics: %s, %v", resp.Status, err)
	}
	return string(body), nil
}

// envDuration is the duration in environment variable name, def if unset.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}
