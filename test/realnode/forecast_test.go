package realnode

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	ebbflowclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/loadgen"
	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// The daily ramp of testForecastPodsMetric: each copy of the sample app
// serves dailyLow requests per second in total, and dailyHigh for
// dailyPlateau from the ramp every day; both scale on
// http_requests_per_second at dailyPerPod a pod, so 1 replica before the
// ramp and 4 on it.
const (
	dailyHPA, dailyEbbflow = "daily-hpa", "daily-ebbflow"
	dailyLow, dailyHigh    = 2.0, 16.0
	dailyPerPod            = 4
	dailyPlateau           = time.Hour
	// dailyPodStartup is the Autoscaler's podStartup (its lead is 15 s
	// more); the sample app's pods are Ready in a few seconds.
	dailyPodStartup = 30 * time.Second
	// dailyScrape is the backfilled history's scrape interval: the chart's
	// rule takes rate() over 20 s, which needs two samples in it.
	dailyScrape = 15 * time.Second
	// dailyDays of history, and an hour and more for the controller's
	// 7d1h (evaluation.ForecastOptions.HistoryRange).
	dailyHistory = 7*24*time.Hour + 2*time.Hour
	// dailyPrepare is from the subtest's start to today's ramp: the
	// backfill, the Prometheus restart and the Deployments must be done, and
	// the HPA and the Autoscaler created, dailyCreateBy before the ramp
	// (about 20 s of the 70 s this leaves were needed on 2 busy cores).
	dailyPrepare  = 120 * time.Second
	dailyCreateBy = 50 * time.Second
	// dailyHighFor is how long today's high load lasts: the HPA scales
	// within it (about 10 s after the ramp).
	dailyHighFor = 45 * time.Second
)

// dailyLoad is the total load of one copy at t for a daily ramp at ramp.
func dailyLoad(t, ramp time.Time) float64 {
	d := t.Sub(ramp) % (24 * time.Hour)
	if d < 0 {
		d += 24 * time.Hour
	}
	if d < dailyPlateau {
		return dailyHigh
	}
	return dailyLow
}

// dailyPastHashes are the pod-template hashes of the Deployments' past
// ReplicaSets, one a day (Kubernetes' generated-name alphabet).
var dailyPastHashes = []string{"5d8f9c7b4", "6c9b7d5f8", "7f6d8b9c5", "8b7c6f5d4", "9d5f7c8b6", "4c8d6b9f7", "5f7b9d6c8", "6d4f8c7b9", "7b5c9f8d6", "8d6b4c9f5"}

// writeDailyHistory writes to b, in OpenMetrics text, the sample app's
// http_requests_total of Deployment name's past pods in appNS as
// Prometheus would have scraped them every dailyScrape from `from` to
// until (multiples of dailyScrape): a rollout a day, twelve hours from the
// ramp, each day two pods of a new ReplicaSet (so no past pod has a name
// of today) sharing dailyLoad. A day's pods count from 0 at its rollout
// and stop at the next, so at every point the rates sum to dailyLoad.
func writeDailyHistory(b *strings.Builder, name string, from, until, ramp time.Time) {
	off := ramp.Add(12*time.Hour).Sub(from) % (24 * time.Hour)
	if off < 0 {
		off += 24 * time.Hour
	}
	suffixes := []string{"x2kzq", "b9v8w"}
	for day := 0; ; day++ {
		start := from.Add(off + time.Duration(day-1)*24*time.Hour)
		if !start.Before(until) {
			return
		}
		end := start.Add(24 * time.Hour)
		if start.Before(from) {
			start = from
		}
		if end.After(until) {
			end = until
		}
		for i, sfx := range suffixes {
			pod := name + "-" + dailyPastHashes[day] + "-" + sfx
			series := fmt.Sprintf(`http_requests_total{code="200",handler="/",instance="10.244.0.%d:8080",job="kubernetes-pods",method="get",namespace=%q,node="ebbflow-node",pod=%q}`,
				200+2*day+i, appNS, pod)
			count := 0.0
			for ts := start; !ts.After(end); ts = ts.Add(dailyScrape) {
				if ts.After(start) {
					count += dailyLoad(ts.Add(-dailyScrape), ramp) * dailyScrape.Seconds() / float64(len(suffixes))
				}
				fmt.Fprintf(b, "%s %g %d\n", series, count, ts.Unix())
			}
		}
	}
}

// dailyBackfill is dailyHistory up to until of both copies, in
// OpenMetrics text.
func dailyBackfill(until, ramp time.Time) []byte {
	until = until.Truncate(dailyScrape)
	var b strings.Builder
	b.WriteString("# TYPE http_requests counter\n")
	for _, name := range []string{dailyHPA, dailyEbbflow} {
		writeDailyHistory(&b, name, until.Add(-dailyHistory), until, ramp)
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// dailySpec is the spec of the HPA and of the Autoscaler on target, with
// forecast (a YAML flow mapping, or "" for none) on the Pods metric.
func dailySpec(target, forecast string) string {
	s := fmt.Sprintf(`  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %s}
  minReplicas: 1
  maxReplicas: 6
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "%d"}
`, target, dailyPerPod)
	if forecast != "" {
		s += "    forecast: " + forecast + "\n"
	}
	return s + "  behavior:\n    scaleDown: {stabilizationWindowSeconds: 15}\n"
}

// testForecastPodsMetric is issue 28 §3 on the real node: two copies of the
// sample app whose load has ramped at the same time every day for a week
// (backfilled into Prometheus as their past pods' http_requests_total,
// under other pods' names than today's), one scaled by
// kube-controller-manager's HPA and one by an Autoscaler whose Pods metric
// (the chart's http_requests_per_second) has a daily forecast with the
// default method and mode (Auto: applied once its backtest over the last
// three days has paid off). Real HTTP load ramps today at the same time. The Autoscaler
// raises the replicas before the load arrives, its pods Ready by then,
// saying so in its Forecast step and Forecasting condition; the HPA only
// after; both answer at least 90 % of requests with 2xx.
func testForecastPodsMetric(ctx context.Context, t *testing.T) {
	t0 := time.Now()
	ramp := t0.Add(dailyPrepare).Truncate(dailyScrape)
	t.Logf("today's ramp at %s", ramp.Format(time.TimeOnly))
	manifests := sampleApp(dailyHPA, "2ms") + "---\n" + sampleApp(dailyEbbflow, "2ms")
	kubectl(ctx, t, manifests, "apply", "-f", "-")
	defer func() {
		_, _ = kubectlErr(context.Background(), "", "delete", "-n", appNS, "--ignore-not-found", "--wait=false",
			"hpa/"+dailyHPA, "autoscalers.autoscaling.ebbflow.dev/"+dailyEbbflow,
			"deployment/"+dailyHPA, "deployment/"+dailyEbbflow, "service/"+dailyHPA, "service/"+dailyEbbflow)
	}()
	// The past ends now: today's pods count no request before it.
	if err := env.C.BackfillPrometheus(ctx, dailyBackfill(t0, ramp)); err != nil {
		t.Fatal(err)
	}
	t.Logf("a week of history backfilled and Prometheus restarted in %v", time.Since(t0).Round(100*time.Millisecond))
	for _, d := range []string{dailyHPA, dailyEbbflow} {
		waitDeploymentReady(ctx, t, appNS, d, time.Minute)
	}

	// Today's load: dailyLow until the ramp, dailyHigh for dailyHighFor.
	// A failure before the end stops it (and the sampling) at once.
	loadCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	results := map[string]loadgen.Result{}
	var mu sync.Mutex
	for _, svc := range []string{dailyHPA, dailyEbbflow} {
		ip := serviceIP(ctx, t, svc)
		profile := []loadgen.Step{{Duration: time.Until(ramp), RPS: dailyLow}, {Duration: dailyHighFor, RPS: dailyHigh}}
		wg.Go(func() {
			r, err := loadgen.Run(loadCtx, loadgen.Config{URL: "http://" + ip + "/", Profile: profile, Concurrency: 16,
				DisableKeepAlives: true, Timeout: 3 * time.Second, MaxRequests: 5000, MaxDuration: dailyPrepare + dailyHighFor + 30*time.Second})
			if err != nil {
				t.Errorf("load on %s: %v", svc, err)
			}
			mu.Lock()
			results[svc] = r
			mu.Unlock()
		})
	}

	checkDailyHistory(ctx, t, ramp)
	if left := time.Until(ramp); left < dailyCreateBy {
		t.Fatalf("the backfill and the Deployments took %v: %v left before the ramp, want at least %v for the Autoscaler to act on its forecast",
			time.Since(t0).Round(time.Second), left.Round(time.Second), dailyCreateBy)
	}
	scale := watchScale(loadCtx, []string{dailyHPA, dailyEbbflow}, ramp.Add(dailyHighFor))
	kubectl(ctx, t, kit.HPA(appNS, dailyHPA, dailySpec(dailyHPA, ""))+"---\n"+
		kit.Autoscaler(appNS, dailyEbbflow, dailySpec(dailyEbbflow, fmt.Sprintf("{season: Daily, podStartup: %v}", dailyPodStartup))),
		"apply", "-f", "-")
	t.Logf("HPA and Autoscaler created %v before the ramp", time.Until(ramp).Round(time.Second))
	checkForecastRecord(ctx, t, ramp)

	tl := <-scale
	wg.Wait()
	ebbWrite, ebbOK := tl.firstAbove(dailyEbbflow, 1)
	hpaWrite, hpaOK := tl.firstAbove(dailyHPA, 1)
	switch {
	case !ebbOK:
		t.Errorf("the Autoscaler never scaled above 1 (by %s)", ramp.Add(dailyHighFor).Format(time.TimeOnly))
	case ramp.Sub(ebbWrite) < dailyPodStartup:
		t.Errorf("the Autoscaler scaled above 1 at %s, %+.1f s from the ramp; want at least its podStartup %v before it",
			ebbWrite.Format("15:04:05.0"), ebbWrite.Sub(ramp).Seconds(), dailyPodStartup)
	default:
		t.Logf("the Autoscaler scaled above 1 at %s, %.1f s before the ramp", ebbWrite.Format("15:04:05.0"), ramp.Sub(ebbWrite).Seconds())
	}
	if spec, ready := tl.replicasAt(dailyEbbflow, ramp); spec < 2 || ready < spec {
		t.Errorf("the Autoscaler's Deployment had %d of %d replicas Ready when the load arrived; want all of the forecast's, more than 1", ready, spec)
	}
	switch {
	case !hpaOK:
		t.Errorf("the HPA never scaled above 1 within %v of the ramp", dailyHighFor)
	case hpaWrite.Before(ramp):
		t.Errorf("the HPA scaled above 1 at %s, before the ramp at %s", hpaWrite.Format("15:04:05.0"), ramp.Format(time.TimeOnly))
	default:
		t.Logf("the HPA scaled above 1 at %s, %.1f s after the ramp", hpaWrite.Format("15:04:05.0"), hpaWrite.Sub(ramp).Seconds())
	}
	for svc, r := range results {
		t.Logf("load on %s: sent %d, ok %d, errors %d, dropped %d, p50 %v, p99 %v", svc, r.Sent, r.OK, r.Errors, r.Dropped, r.Latency.P50, r.Latency.P99)
		if r.Sent == 0 || r.OK < r.Sent*9/10 {
			t.Errorf("load on %s: only %d of %d requests answered 2xx", svc, r.OK, r.Sent)
		}
	}
	t.Logf("wall time %v", time.Since(t0).Round(time.Second))
}

// checkDailyHistory reads daily-ebbflow's history as ebbflow-autoscaler
// does — through kube-apiserver and the chart's adapter, its past pods
// selected by the shape of the Deployment's pod names — once Prometheus
// answers with the backfill: a week of points, the day before's ramp at
// dailyHigh and the hour before it at dailyLow.
func checkDailyHistory(ctx context.Context, t *testing.T, ramp time.Time) {
	t.Helper()
	cfg := env.C.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rest := metrics.NewREST(nil, customclient.NewForConfig(cfg, rulefile.DefaultRESTMapper(), customclient.NewAvailableAPIsGetter(dc)), nil)
	w := metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: dailyEbbflow}
	req := metrics.HistoryRequest{Range: 7*24*time.Hour + time.Hour, Step: time.Minute}
	sel := labels.SelectorFromSet(labels.Set{"app": dailyEbbflow})
	at := func(h []float64, start time.Time, step time.Duration, ts time.Time) float64 {
		i := int(ts.Sub(start) / step)
		if i < 0 || i >= len(h) {
			return math.NaN()
		}
		return h[i]
	}
	yesterday := ramp.Add(-24 * time.Hour).Truncate(time.Minute)
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		h, err := rest.PodsHistory(ctx, appNS, "http_requests_per_second", w, sel, labels.Everything(), req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		n := 0
		for _, v := range h.Values {
			if !math.IsNaN(v) {
				n++
			}
		}
		high := at(h.Values, h.Start, h.Step, yesterday.Add(30*time.Minute))
		low := at(h.Values, h.Start, h.Step, yesterday.Add(-30*time.Minute))
		last = fmt.Sprintf("%d points from %s, %v at yesterday's ramp + 30 min, %v 30 min before it", n, h.Start.Format(time.DateTime), high, low)
		return n >= 7*24*60 && math.Abs(high-dailyHigh) < 0.01 && math.Abs(low-dailyLow) < 0.01, nil
	})
	if err != nil {
		t.Fatalf("daily-ebbflow's history through kube-apiserver: want a week, %v yesterday on the ramp and %v before it; got %s", dailyHigh, dailyLow, last)
	}
	t.Logf("daily-ebbflow's history through kube-apiserver: %s", last)
}

// checkForecastRecord waits, before the ramp, for the Autoscaler's
// decision record to hold a Forecast step raising the proposal above 1 on
// the forecast of http_requests_per_second with its backtest paid off, and
// its Forecasting condition True.
func checkForecastRecord(ctx context.Context, t *testing.T, ramp time.Time) {
	t.Helper()
	c, err := ebbflowclient.NewForConfig(env.C.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var a *v1alpha1.Autoscaler
	var step *v1alpha1.DecisionStep
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Until(ramp), true, func(ctx context.Context) (bool, error) {
		got, err := c.AutoscalingV1alpha1().Autoscalers(appNS).Get(ctx, dailyEbbflow, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		a, step = got, forecastStep(got.Status.LastDecision)
		return step != nil, nil
	})
	if err != nil {
		var steps []v1alpha1.DecisionStep
		var conds []string
		if a != nil {
			if a.Status.LastDecision != nil {
				steps = a.Status.LastDecision.Steps
			}
			for _, c := range a.Status.Conditions {
				conds = append(conds, fmt.Sprintf("%s %s/%s: %s", c.Type, c.Status, c.Reason, c.Message))
			}
		}
		t.Errorf("no decision record with a Forecast step raising the proposal above 1 before the ramp; last steps %+v, conditions %q", steps, conds)
		return
	}
	t.Logf("Forecast step %d → %d: %s", step.From, step.To, step.Message)
	if !strings.Contains(step.Message, "paid off") {
		t.Errorf("the Forecast step does not say the backtest paid off (mode Auto): %s", step.Message)
	}
	var cond string
	for _, c := range a.Status.Conditions {
		if c.Type == "Forecasting" {
			cond = fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
			if c.Status == corev1.ConditionTrue && c.Reason == "ForecastAvailable" {
				return
			}
		}
	}
	t.Errorf("Forecasting condition %q, want True/ForecastAvailable", cond)
}

// forecastStep is rec's Forecast step of http_requests_per_second that
// raised the proposal above 1, if any.
func forecastStep(rec *v1alpha1.DecisionRecord) *v1alpha1.DecisionStep {
	if rec == nil {
		return nil
	}
	for i, s := range rec.Steps {
		if s.Stage == "Forecast" && s.From < s.To && s.To > 1 && strings.Contains(s.Message, "forecast of http_requests_per_second") {
			return &rec.Steps[i]
		}
	}
	return nil
}

// scaleTimeline is the Deployments' spec and Ready replicas sampled every
// 250 ms.
type scaleTimeline struct {
	at          []time.Time
	spec, ready []map[string]int32
}

// watchScale samples the Deployments until `until` and then sends the
// timeline.
func watchScale(ctx context.Context, names []string, until time.Time) <-chan scaleTimeline {
	ch := make(chan scaleTimeline, 1)
	go func() {
		var tl scaleTimeline
		for time.Now().Before(until) && ctx.Err() == nil {
			spec, ready := map[string]int32{}, map[string]int32{}
			for _, n := range names {
				d, err := env.C.Client().AppsV1().Deployments(appNS).Get(ctx, n, metav1.GetOptions{})
				if err == nil && d.Spec.Replicas != nil {
					spec[n], ready[n] = *d.Spec.Replicas, d.Status.ReadyReplicas
				}
			}
			tl.at = append(tl.at, time.Now())
			tl.spec, tl.ready = append(tl.spec, spec), append(tl.ready, ready)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
		ch <- tl
	}()
	return ch
}

// firstAbove is the first sample at which name's spec.replicas exceeded n.
func (tl scaleTimeline) firstAbove(name string, n int32) (time.Time, bool) {
	for i, s := range tl.spec {
		if s[name] > n {
			return tl.at[i], true
		}
	}
	return time.Time{}, false
}

// replicasAt is name's spec and Ready replicas at the last sample before t.
func (tl scaleTimeline) replicasAt(name string, t time.Time) (spec, ready int32) {
	for i, at := range tl.at {
		if at.After(t) {
			break
		}
		spec, ready = tl.spec[i][name], tl.ready[i][name]
	}
	return spec, ready
}
