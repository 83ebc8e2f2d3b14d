package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// The Pods-metric forecast e2e: requests per second per pod, the workload's
// total reading forecastLow, and forecastHigh for two hours from the ramp
// every day (forecastLoad), spread evenly over its pods.
const (
	podsRPS                      = "e2e_pod_rps"
	podsForecastApp, podsHPAApp  = "pforecast", "phpa"
	podsDecoy                    = 1000.0
	podsForecastPrepare          = 90 * time.Second
	podsPastEnd                  = 6 * time.Minute
	podsForecastJob, podsForInst = "podforecast", "pods-exporter"
)

const podsRules = `
rules:
- seriesQuery: 'e2e_pod_rps{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

func podRPSLabels(ns, pod string) map[string]string {
	return map[string]string{"namespace": ns, "pod": pod, "job": podsForecastJob, "instance": podsForInst}
}

// podsBackfill is five days of e2e_pod_rps up to until, one sample a
// minute, in OpenMetrics text: each day the workload pforecast ran two pods
// of another ReplicaSet (a rollout a day, so no pod of the past has a name
// of today), each with half of forecastLoad; the last day's stop
// podsPastEnd before until. Beside them, decoys at
// podsDecoy that a Pods history of pforecast must leave out: a Deployment
// pforecast-api's pod, a StatefulSet pforecast's, a bare ReplicaSet
// pforecast's, and a pod named as pforecast's in another namespace.
func podsBackfill(until, ramp time.Time) []byte {
	// Pod-template hashes and suffixes from Kubernetes' alphabet.
	hashes := []string{"5d8f9c7b4", "6c9b7d5f8", "7f6d8b9c5", "8b7c6f5d4", "9d5f7c8b6", "4c8d6b9f7"}
	suffixes := []string{"x2kzq", "b9v8w"}
	decoys := map[[2]string]bool{
		{"default", podsForecastApp + "-api-5d8f9c7b4-x2kzq"}: true,
		{"default", podsForecastApp + "-0"}:                   true,
		{"default", podsForecastApp + "-x2kzq"}:               true,
		{"other", podsForecastApp + "-5d8f9c7b4-x2kzq"}:       true,
	}
	var b strings.Builder
	b.WriteString("# TYPE " + podsRPS + " gauge\n")
	line := func(ns, pod string, v float64, ts time.Time) {
		fmt.Fprintf(&b, "%s{instance=%q,job=%q,namespace=%q,pod=%q} %g %d\n", podsRPS, podsForInst, podsForecastJob, ns, pod, v, ts.Unix())
	}
	until = until.Truncate(time.Minute)
	from := until.Add(-5 * 24 * time.Hour)
	// The past pods stop podsPastEnd before until: Prometheus carries a
	// backfilled series' last sample for 5 minutes (no staleness marker),
	// which would add it to today's pods' first live samples.
	pastEnd := until.Add(-podsPastEnd)
	// A rollout a day, twelve hours from the ramp: each day's pods stop
	// podsPastEnd before the next day's start, so no two days' pods are
	// summed at once (one minute without a point instead). OpenMetrics
	// wants each series' samples together.
	off := ramp.Add(12*time.Hour).Sub(from) % (24 * time.Hour)
	if off < 0 {
		off += 24 * time.Hour
	}
	for day := range 6 {
		start := from.Add(off + time.Duration(day-1)*24*time.Hour)
		end := start.Add(24*time.Hour - podsPastEnd)
		start, end = later(start, from), earlier(end, pastEnd)
		for _, sfx := range suffixes {
			pod := podsForecastApp + "-" + hashes[day] + "-" + sfx
			for ts := start; !ts.After(end); ts = ts.Add(time.Minute) {
				line("default", pod, forecastLoad(ts, ramp)/2, ts)
			}
		}
	}
	for d := range decoys {
		for ts := from; !ts.After(until); ts = ts.Add(time.Minute) {
			line(d[0], d[1], podsDecoy, ts)
		}
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestForecastPodsMetric is issue 28 §3's e2e, on a cluster of its own:
// requests per second per pod (a Pods metric, AverageValue 10 a pod) whose
// workload total has ramped at the same minute every day, served by pods
// whose names changed every day. An Autoscaler with a daily forecast (lead
// 90 s) reads the history of its Deployment's pods — past pods selected by
// the shape of the Deployment's pod names, today's names unknown to the
// past — and scales at least lead − one sync period before today's ramp,
// with a Forecast step and Forecasting True; kube-controller-manager's HPA
// on the same metric scales only after it. The history read through
// kube-apiserver's aggregation holds the backfilled days and none of the
// decoys (another workload's pods, another namespace's).
func TestForecastPodsMetric(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	e := exporter.New()
	e.Start(t)
	c, ebb := startForecastCluster(t, e.Addr(), podsForecastJob, cluster.Options{
		RulesYAML:           []byte(podsRules),
		PrometheusRetention: 30 * 24 * time.Hour,
		HPASyncPeriod:       forecastPeriod,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 7*time.Minute)
	defer cancel()
	ramp := time.Now().Add(podsForecastPrepare + forecastLead).Truncate(time.Minute).Add(time.Minute)
	t.Logf("cluster and ebbflow-autoscaler ready after %v; the ramp arrives at %s", time.Since(t0).Round(time.Second), ramp.Format(time.TimeOnly))
	if err := c.BackfillPrometheus(ctx, podsBackfill(t0, ramp)); err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	// Today's pods publish their share of the load; at the ramp, the high one.
	pods := map[string][]string{}
	for _, name := range []string{podsForecastApp, podsHPAApp} {
		createForecastDeployment(ctx, t, c.Client(), ns, name)
		pods[name] = waitPods(ctx, t, c.Client(), ns, name, forecastMin)
		for _, p := range pods[name] {
			e.SetGauge(podsRPS, podRPSLabels(ns, p), forecastLow/forecastMin)
		}
	}
	t.Logf("today's pods: %v", pods)
	rise := time.AfterFunc(time.Until(ramp), func() {
		for _, ps := range pods {
			for _, p := range ps {
				e.SetGauge(podsRPS, podRPSLabels(ns, p), forecastHigh/forecastMin)
			}
		}
	})
	defer rise.Stop()

	checkPodsHistory(ctx, t, c, ns, t0.Truncate(time.Minute).Add(-podsPastEnd))

	spec := hpaSpec(forecastMin, forecastMax, nil, autoscalingv2.MetricSpec{
		Type: autoscalingv2.PodsMetricSourceType,
		Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: podsRPS},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(forecastTarget))},
		},
	})
	spec.ScaleTargetRef.Name = podsHPAApp
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: podsHPAApp}, Spec: spec}
	if _, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create hpa: %v", err)
	}
	spec.ScaleTargetRef.Name = podsForecastApp
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: podsForecastApp}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.SyncPeriodSeconds = ptr.To(int32(forecastPeriod / time.Second))
	a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Season: v1alpha1.SeasonDaily, Method: v1alpha1.ForecastMethod("LevelCorrected"),
		PodStartup: &metav1.Duration{Duration: forecastPodStartup}}

	writes := map[string]chan time.Time{podsForecastApp: make(chan time.Time, 1), podsHPAApp: make(chan time.Time, 1)}
	for name, ch := range writes {
		go firstScaleAbove(ctx, c.Client(), ns, name, forecastMin, ch)
	}
	// As in TestForecastScalesBeforeTheRamp: evaluations before now+lead
	// reaches the ramp must not scale (a decoy in the history would), one
	// just after must.
	horizon := ramp.Add(-forecastLead)
	create := horizon.Add(-3*forecastPeriod + forecastPeriod/10)
	if left := time.Until(create); left < 0 {
		t.Fatalf("the backfill and the workloads took more than %v: the Autoscaler should have existed %v ago", podsForecastPrepare, -left.Round(time.Second))
	} else {
		t.Logf("creating the Autoscaler in %v", left.Round(time.Second))
		time.Sleep(left)
	}
	if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}

	forecastWrite := waitWrite(t, writes[podsForecastApp], ramp.Add(time.Minute), "the Autoscaler")
	checkForecastWrite(t, "the Autoscaler", forecastWrite, ramp, horizon, forecastLead)
	var got *v1alpha1.Autoscaler
	if _, err := pollUntil(10*time.Second, func(ctx context.Context) bool {
		a, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, podsForecastApp, metav1.GetOptions{})
		got = a
		return err == nil && got.Status.LastDecision != nil && hasPodsForecastStep(got.Status.LastDecision)
	}); err != nil {
		t.Errorf("no decision record with a Forecast step of %s raising the proposal above %d: %v; last: %+v", podsRPS, forecastMin, err, got)
	} else {
		t.Logf("decision record: %+v", got.Status.LastDecision.Steps)
	}
	if got == nil || !hasConditionReason(got, "Forecasting", corev1.ConditionTrue, "ForecastAvailable") {
		t.Errorf("Forecasting condition not True/ForecastAvailable: %+v", got)
	}
	hpaWrite := waitWrite(t, writes[podsHPAApp], ramp.Add(time.Minute), "the HPA")
	t.Logf("the HPA scaled above %d at %s, %.1f s after the ramp", forecastMin, hpaWrite.Format("15:04:05.000"), hpaWrite.Sub(ramp).Seconds())
	if hpaWrite.Before(ramp) {
		t.Errorf("the HPA scaled at %s, before the ramp at %s", hpaWrite.Format("15:04:05.000"), ramp.Format(time.TimeOnly))
	}
	t.Logf("wall time %v", time.Since(t0).Round(time.Second))
}

// checkPodsHistory reads pforecast's history as the controller does,
// through kube-apiserver's aggregation and ebbflow-adapter, once Prometheus
// answers with the backfill: four days and more of points, those up to
// pastEnd the backfilled total (forecastLow or forecastHigh), and none
// above forecastHigh (a decoy summed in).
func checkPodsHistory(ctx context.Context, t *testing.T, c *cluster.Cluster, ns string, pastEnd time.Time) {
	t.Helper()
	cfg := c.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rest := metrics.NewREST(nil, customclient.NewForConfig(cfg, rulefile.DefaultRESTMapper(), customclient.NewAvailableAPIsGetter(dc)), nil)
	w := metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: podsForecastApp}
	req := metrics.HistoryRequest{Range: 4*24*time.Hour + time.Hour, Step: time.Minute}
	podSel := labels.SelectorFromSet(labels.Set{"app": podsForecastApp})
	var points, low, high, other int
	var last error
	if _, err := pollUntil(time.Minute, func(ctx context.Context) bool {
		h, err := rest.PodsHistory(ctx, ns, podsRPS, w, podSel, labels.Everything(), req)
		if last = err; err != nil {
			return false
		}
		points, low, high, other = 0, 0, 0, 0
		for i, v := range h.Values {
			at := h.Start.Add(time.Duration(i) * h.Step)
			switch {
			case math.IsNaN(v):
				continue
			case v > forecastHigh+0.001:
				last = fmt.Errorf("%v at %s: more than the workload's %v, a decoy summed in", v, at.Format(time.RFC3339), forecastHigh)
				return false
			case at.After(pastEnd):
			case math.Abs(v-forecastHigh) < 0.001:
				high++
			case math.Abs(v-forecastLow) < 0.001:
				low++
			default:
				other++
			}
			points++
		}
		return points > 4*24*60
	}); err != nil {
		t.Fatalf("pforecast's history through kube-apiserver: %v (%d points; last: %v)", err, points, last)
	}
	t.Logf("pforecast's history through kube-apiserver: %d points, %d at %v and %d at %v up to %s", points, low, forecastLow, high, forecastHigh, pastEnd.Format(time.TimeOnly))
	if high < 4*2*60-10 || other != 0 {
		t.Errorf("history: %d points at %v, %d at %v and %d others up to %s, want four days of two-hour ramps and nothing else", high, forecastHigh, low, forecastLow, other, pastEnd.Format(time.TimeOnly))
	}
}

// waitPods returns the names of the n pods labelled app=name once they
// exist.
func waitPods(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string, n int) []string {
	t.Helper()
	var names []string
	if _, err := pollUntil(time.Minute, func(ctx context.Context) bool {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false
		}
		names = names[:0]
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		return len(names) == n
	}); err != nil {
		t.Fatalf("pods of %s: %v (have %v)", name, err, names)
	}
	return names
}

// hasPodsForecastStep reports whether rec has a Forecast step of the Pods
// metric that raised the proposal above forecastMin.
func hasPodsForecastStep(rec *v1alpha1.DecisionRecord) bool {
	for _, s := range rec.Steps {
		if s.Stage == "Forecast" && s.To > forecastMin && s.From < s.To && strings.Contains(s.Message, "forecast of "+podsRPS) {
			return true
		}
	}
	return false
}
