//go:build benchcluster

package benchcluster

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// The forecast-cost bench's series carry these labels besides queue, in
// the exporter (scraped with honor_labels) and in the backfill, so that
// history and live samples are one series.
const forecastCostJob, forecastCostInstance = "periods", "queue-exporter"

// TestBenchForecastCost measures what a forecast's self-check costs at N
// forecasting autoscalers (issue 28 §2; `make bench-forecast-cost`):
// EBBFLOW_FORECAST_COST_N (default 1000) Autoscalers, each on its own
// External metric with a week of daily history backfilled into a real
// Prometheus (every 5 minutes, read on the controller's 1-minute grid),
// evaluated every 15 s by ebbflow-autoscaler as a host process. Two phases
// on one cluster: the metric alone (a window of EBBFLOW_FORECAST_COST_WINDOW,
// default 6 min), then every Autoscaler given `forecast: {season: Daily,
// podStartup: 90s}` (mode Auto): the warm-up until every one has a backtest
// (its first history read and backtest), then the same window (longer than
// the 5-minute history refresh). Per phase: autoscaler, adapter and
// Prometheus CPU, the autoscaler's resident memory, evaluations, and the
// adapter's Prometheus queries (a history is one query of a range selector;
// the reads beyond one per evaluation are histories). Report in
// _output/bench/forecast-cost-<time>.md.
func TestBenchForecastCost(t *testing.T) {
	n, err := strconv.Atoi(envOr("EBBFLOW_FORECAST_COST_N", "1000"))
	if err != nil || n <= 0 {
		t.Fatalf("EBBFLOW_FORECAST_COST_N: want a positive count, got %q", os.Getenv("EBBFLOW_FORECAST_COST_N"))
	}
	window := envDuration(t, "EBBFLOW_FORECAST_COST_WINDOW", 6*time.Minute)
	const period = 15 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute+2*window)
	defer cancel()

	start := time.Now()
	e := exporter.New()
	e.Start(t)
	// Live, each queue is at its target (one replica, as createPeriodWorkload
	// waits for); its history is a daily curve.
	for i := range n {
		e.SetGauge(periodsGauge, forecastCostLabels(i), TargetPerReplica)
	}
	t0 := time.Now()
	history := forecastCostHistory(n, start.Add(-(7*24+1)*time.Hour), start.Add(-time.Minute), 5*time.Minute)
	opts := cluster.Options{
		Nodes: 1, RulesYAML: []byte(periodsRules), PrometheusRetention: 30 * 24 * time.Hour, PrometheusBackfill: history,
		PrometheusTargets: []promtest.Target{{Addr: e.Addr(), Job: forecastCostJob, HonorLabels: true}},
	}
	if testing.Verbose() {
		opts.Log = os.Stdout
	}
	c := cluster.StartT(t, opts)
	t.Logf("cluster with %d series × a week of history (%d MB of OpenMetrics) ready in %v", n, len(history)>>20, time.Since(t0).Round(time.Second))
	if err := waitExternalMetric(ctx, c, queueName(n-1)); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAutoscaler(ctx, cluster.AutoscalerOptions{}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	groups := []PeriodGroup{{Period: period, Count: n}}
	if err := createPeriodWorkload(ctx, c, groups); err != nil {
		t.Fatal(err)
	}
	if err := sleep(ctx, period+10*time.Second); err != nil {
		t.Fatal(err)
	}
	reactive := forecastCostWindow(ctx, t, c, "metric alone", window)

	// Every Autoscaler forecasts from now on.
	ebb, err := ebbclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	warm0, err := forecastCostSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := addForecasts(ctx, ebb, n); err != nil {
		t.Fatal(err)
	}
	reasons, err := waitBacktests(ctx, ebb, n, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	warm1, err := forecastCostSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	warm := forecastCostPhase{Name: "forecast warm-up (first history read and backtest of each)", Window: warm1.at.Sub(warm0.at)}
	warm.fill(warm0, warm1)
	t.Logf("every Autoscaler backtested %v after the forecasts were added: %v", warm.Window.Round(time.Second), reasons)
	forecast := forecastCostWindow(ctx, t, c, "forecast, steady", window)

	table := forecastCostTable(n, []forecastCostPhase{reactive, warm, forecast})
	report := fmt.Sprintf("# bench-forecast-cost %s, nproc %d, load average %s, %d autoscalers every %v, conditions after warm-up %v\n\n%s",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), loadAverage(), n, period, reasons, table)
	t.Log("\n" + report)
	out := filepath.Join(buildtools.MustRepoRoot(t), "_output", "bench", "forecast-cost-"+time.Now().UTC().Format("20060102T150405Z")+".md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err == nil && os.WriteFile(out, []byte(report), 0o644) == nil {
		t.Logf("report: %s", out)
	}
	// Each evaluation reads the metric once; a forecasting autoscaler also
	// reads its history at its first evaluation and then every 5 minutes.
	if warm.HistoryReads() < float64(n) {
		t.Errorf("warm-up: %.0f history reads for %d autoscalers; want one each at least", warm.HistoryReads(), n)
	}
	if due := float64(n) * forecast.Window.Minutes() / 5; forecast.HistoryReads() < due-float64(n) || forecast.HistoryReads() > due+float64(n) {
		t.Errorf("forecast, steady: %.0f history reads in %v for %d autoscalers; want one each every 5 minutes: %.0f ± %d", forecast.HistoryReads(), forecast.Window, n, due, n)
	}
	if h := reactive.HistoryReads(); h > float64(n)/10+5 {
		t.Errorf("metric alone: %.0f more Prometheus queries than evaluations: histories read without a forecast", h)
	}
}

func forecastCostLabels(i int) map[string]string {
	return map[string]string{"queue": queueName(i), "job": forecastCostJob, "instance": forecastCostInstance}
}

// forecastCostLoad is queue i's daily curve at t: between 1 and 5 replicas'
// worth of TargetPerReplica, its phase shifted by i.
func forecastCostLoad(i int, t time.Time) float64 {
	day := float64(t.Unix()%86400) / 86400
	return math.Round(TargetPerReplica * (3 + 2*math.Sin(2*math.Pi*(day+float64(i%24)/24))))
}

// forecastCostHistory is the n queues' daily curves from from to until,
// one sample every step, in OpenMetrics text.
func forecastCostHistory(n int, from, until time.Time, step time.Duration) []byte {
	var b strings.Builder
	b.WriteString("# TYPE " + periodsGauge + " gauge\n")
	for i := range n {
		series := fmt.Sprintf(`%s{instance=%q,job=%q,queue=%q}`, periodsGauge, forecastCostInstance, forecastCostJob, queueName(i))
		for ts := from.Truncate(step); !ts.After(until); ts = ts.Add(step) {
			fmt.Fprintf(&b, "%s %g %d\n", series, forecastCostLoad(i, ts), ts.Unix())
		}
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// addForecasts gives every Autoscaler's metric a daily forecast.
func addForecasts(ctx context.Context, ebb ebbclient.Interface, n int) error {
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					a, err := ebb.AutoscalingV1alpha1().Autoscalers(periodsNS).Get(ctx, queueName(i), metav1.GetOptions{})
					if err != nil {
						return err
					}
					a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Season: v1alpha1.SeasonDaily, PodStartup: &metav1.Duration{Duration: 90 * time.Second}}
					_, err = ebb.AutoscalingV1alpha1().Autoscalers(periodsNS).Update(ctx, a, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					errs <- fmt.Errorf("autoscaler %s: add forecast: %w", queueName(i), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// waitBacktests waits until every Autoscaler's Forecasting condition has a
// backtest behind it (any reason but BacktestPending or none), and returns
// the count of each reason.
func waitBacktests(ctx context.Context, ebb ebbclient.Interface, n int, timeout time.Duration) (map[string]int, error) {
	var reasons map[string]int
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, timeout, false, func(ctx context.Context) (bool, error) {
		list, err := ebb.AutoscalingV1alpha1().Autoscalers(periodsNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		reasons = map[string]int{}
		done := 0
		for _, a := range list.Items {
			reason := "none"
			for _, c := range a.Status.Conditions {
				if c.Type == evaluation.ConditionForecasting {
					reason = c.Reason
				}
			}
			reasons[reason]++
			if reason != "none" && reason != evaluation.ReasonBacktestPending {
				done++
			}
		}
		return done == n, nil
	})
	if err != nil {
		return reasons, fmt.Errorf("not every Autoscaler backtested its forecast within %v: %v", timeout, reasons)
	}
	return reasons, nil
}

// forecastCostPhase is one phase's figures.
type forecastCostPhase struct {
	Name                     string
	Window                   time.Duration
	Evals                    float64
	CPU, AdapterCPU, PromCPU time.Duration
	RSSMiB                   float64
	Queries                  float64 // the adapter's instant queries (metrics and histories)
}

// HistoryReads is the queries beyond one per evaluation (the metric's).
func (p forecastCostPhase) HistoryReads() float64 { return p.Queries - p.Evals }

// forecastCostSnapshot is a periodSnapshot and Prometheus' own CPU.
type forecastCostSnapshot struct {
	periodSnapshot
	promCPU float64
}

func forecastCostSnap(ctx context.Context, c *cluster.Cluster) (forecastCostSnapshot, error) {
	s, err := periodSnap(ctx, c)
	if err != nil {
		return forecastCostSnapshot{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Prometheus().URL()+"/metrics", nil)
	if err != nil {
		return forecastCostSnapshot{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return forecastCostSnapshot{}, fmt.Errorf("prometheus /metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return forecastCostSnapshot{}, fmt.Errorf("prometheus /metrics: %w", err)
	}
	scrape, err := ParseScrape(string(body))
	if err != nil {
		return forecastCostSnapshot{}, err
	}
	return forecastCostSnapshot{s, scrape.Sum("process_cpu_seconds_total", nil)}, nil
}

func (p *forecastCostPhase) fill(before, after forecastCostSnapshot) {
	evals, prom := "ebbflow_autoscaler_reconcile_duration_seconds", "ebbflow_adapter_prometheus_request_duration_seconds"
	p.Evals = after.autoscaler.Sum(evals, nil) - before.autoscaler.Sum(evals, nil)
	p.CPU = after.procs[cluster.Autoscaler].CPU - before.procs[cluster.Autoscaler].CPU
	p.AdapterCPU = after.procs[cluster.Adapter].CPU - before.procs[cluster.Adapter].CPU
	p.PromCPU = time.Duration((after.promCPU - before.promCPU) * float64(time.Second))
	p.RSSMiB = float64(after.procs[cluster.Autoscaler].RSS) / (1 << 20)
	l := map[string]string{"endpoint": "query"}
	p.Queries = after.adapter.Sum(prom, l) - before.adapter.Sum(prom, l)
}

// forecastCostWindow measures one steady window.
func forecastCostWindow(ctx context.Context, t *testing.T, c *cluster.Cluster, name string, window time.Duration) forecastCostPhase {
	t.Helper()
	before, err := forecastCostSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sleep(ctx, window); err != nil {
		t.Fatal(err)
	}
	after, err := forecastCostSnap(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	p := forecastCostPhase{Name: name, Window: after.at.Sub(before.at)}
	p.fill(before, after)
	return p
}

// forecastCostTable is the report's table: per phase, totals and per
// autoscaler per hour.
func forecastCostTable(n int, phases []forecastCostPhase) string {
	var b strings.Builder
	b.WriteString("| phase | window | evaluations | autoscaler CPU | … per autoscaler-hour | adapter CPU | Prometheus CPU | autoscaler RSS | Prometheus queries | history reads | … per autoscaler-hour |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range phases {
		perHour := func(v float64) float64 { return v / float64(n) / p.Window.Hours() }
		fmt.Fprintf(&b, "| %s | %v | %.0f | %.1f s | %.2f s | %.1f s | %.1f s | %.0f MiB | %.0f | %.0f | %.1f |\n",
			p.Name, p.Window.Round(time.Second), p.Evals, p.CPU.Seconds(), perHour(p.CPU.Seconds()), p.AdapterCPU.Seconds(), p.PromCPU.Seconds(),
			p.RSSMiB, p.Queries, p.HistoryReads(), perHour(p.HistoryReads()))
	}
	return b.String()
}
