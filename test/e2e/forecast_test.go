package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// The forecast e2e's load and settings. The queue reads forecastLow, and
// forecastHigh for two hours from the ramp every day. Both the Autoscaler
// and the HPA ask AverageValue forecastTarget per pod with at least
// forecastMin replicas, so both hold forecastMin before the ramp; after it
// the queue asks 10.
//
// LevelCorrected (set explicitly) forecasts the mean of the ±5 minutes
// around now+lead in the past days (1-minute points; the level ratio is 1,
// every day being alike). That mean asks more than forecastMin only when at
// least 6 of its points are on the plateau — (6×100+4×20)/10 = 68 or
// (6×100+5×20)/11 = 63.6, i.e. 7 replicas, while 5 of 10 or 11 points ask
// at most 60, i.e. 6 — that is exactly when now+lead reaches the ramp
// (which sits on a minute, as the history's points do).
const (
	forecastLow, forecastHigh = 20.0, 100.0
	forecastTarget            = "10"
	forecastMin, forecastMax  = 6, 20
	// forecastPodStartup gives the default lead, podStartup + 15 s.
	forecastPodStartup = 75 * time.Second
	forecastLead       = forecastPodStartup + 15*time.Second
	// forecastPeriod is both controllers' sync period.
	forecastPeriod = 5 * time.Second
	// forecastPrepare is the time the backfill, the Prometheus restart and
	// the workloads get, once the cluster runs, before the Autoscaler must
	// exist.
	forecastPrepare = 60 * time.Second
	forecastQueue   = "e2e-forecast"
)

// forecastRules is the forecast cluster's rule file: the queue as an
// external metric, as in the shared cluster.
const forecastRules = `
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

// forecastLabels are the queue series' labels, job and instance included:
// the exporter publishes them (scraped with honor_labels) and the backfill
// writes them, so the history and the live samples are one series.
func forecastLabels() map[string]string {
	return map[string]string{"queue": forecastQueue, "job": "forecast", "instance": "queue-exporter"}
}

// forecastLoad is the queue depth at t for a daily ramp at ramp.
func forecastLoad(t, ramp time.Time) float64 {
	d := t.Sub(ramp) % (24 * time.Hour)
	if d < 0 {
		d += 24 * time.Hour
	}
	if d < 2*time.Hour {
		return forecastHigh
	}
	return forecastLow
}

// forecastBackfill is a week of the queue, one sample a minute up to
// until, in OpenMetrics text.
func forecastBackfill(until, ramp time.Time) []byte {
	until = until.Truncate(time.Minute)
	return queueHistory(until.Add(-7*24*time.Hour), until, time.Minute, func(ts time.Time) float64 { return forecastLoad(ts, ramp) })
}

// TestForecastScalesBeforeTheRamp is issue 22's e2e on a cluster of its own
// (its Prometheus is given a week of history once everything runs): the queue
// has ramped at the same minute every day of the past week; today's ramp
// comes a few minutes after the test starts. An Autoscaler with a forecast
// (lead 90 s, from podStartup 75 s) and a plain HPA of kube-controller-manager
// on the same metric and target scale two Deployments. The Autoscaler's
// /scale write above the pre-ramp count comes at least lead − one sync
// period before the ramp (its decision record has the Forecast step and
// its Forecasting condition is True); the HPA's comes only after the ramp.
func TestForecastScalesBeforeTheRamp(t *testing.T) {
	// Its own cluster: runs beside the other parallel tests (-parallel in the Makefile).
	t.Parallel()
	t0 := time.Now()
	e := exporter.New()
	e.Start(t)
	e.SetGauge(QueueGauge, forecastLabels(), forecastLow)

	c, ebb := startForecastCluster(t, e.Addr(), "forecast", cluster.Options{
		RulesYAML:           []byte(forecastRules),
		PrometheusRetention: 30 * 24 * time.Hour,
		HPASyncPeriod:       forecastPeriod,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Today's ramp, chosen once everything runs (however long that took),
	// and the week before it, backfilled up to t0 (before Prometheus'
	// first scrape, so the history and the live samples do not overlap).
	ramp := time.Now().Add(forecastPrepare + forecastLead).Truncate(time.Minute).Add(time.Minute)
	t.Logf("cluster and ebbflow-autoscaler ready after %v; the ramp arrives at %s", time.Since(t0).Round(time.Second), ramp.Format(time.TimeOnly))
	if err := c.BackfillPrometheus(ctx, forecastBackfill(t0, ramp)); err != nil {
		t.Fatal(err)
	}
	rise := time.AfterFunc(time.Until(ramp), func() { e.SetGauge(QueueGauge, forecastLabels(), forecastHigh) })
	defer rise.Stop()
	const ns = "default"
	for _, name := range []string{"forecast", "hpa"} {
		createForecastDeployment(ctx, t, c.Client(), ns, name)
	}
	spec := hpaSpec(forecastMin, forecastMax, nil, autoscalingv2.MetricSpec{
		Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: QueueGauge,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": forecastQueue}}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(forecastTarget))},
		},
	})
	spec.ScaleTargetRef.Name = "hpa"
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "hpa"}, Spec: spec}
	if _, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create hpa: %v", err)
	}
	spec.ScaleTargetRef.Name = "forecast"
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: "forecast"}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.SyncPeriodSeconds = ptr.To(int32(forecastPeriod / time.Second))
	a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Season: v1alpha1.SeasonDaily, Method: v1alpha1.ForecastMethod("LevelCorrected"),
		PodStartup: &metav1.Duration{Duration: forecastPodStartup}}

	writes := map[string]chan time.Time{"forecast": make(chan time.Time, 1), "hpa": make(chan time.Time, 1)}
	for name, ch := range writes {
		go firstScaleAbove(ctx, c.Client(), ns, name, forecastMin, ch)
	}

	// Evaluations come every sync period from the Autoscaler's creation:
	// created so that one falls just after now+lead reaches the ramp (the
	// write then measures the forecast, not the evaluations' phase), and
	// two or more before it, which must not scale.
	horizon := ramp.Add(-forecastLead)
	create := horizon.Add(-3*forecastPeriod + forecastPeriod/10)
	if left := time.Until(create); left < 0 {
		t.Fatalf("the backfill and the workloads took more than %v: the Autoscaler should have existed %v ago", forecastPrepare, -left.Round(time.Second))
	} else {
		t.Logf("creating the Autoscaler in %v", left.Round(time.Second))
		time.Sleep(left)
	}
	if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}

	forecastWrite := waitWrite(t, writes["forecast"], ramp.Add(time.Minute), "the Autoscaler")
	checkForecastWrite(t, "the Autoscaler", forecastWrite, ramp, horizon, forecastLead)
	// The status (condition and record) is written after the scale.
	var got *v1alpha1.Autoscaler
	if _, err := pollUntil(10*time.Second, func(ctx context.Context) bool {
		a, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, "forecast", metav1.GetOptions{})
		got = a
		return err == nil && got.Status.LastDecision != nil && hasForecastStep(got.Status.LastDecision)
	}); err != nil {
		t.Errorf("no decision record with a Forecast step raising the proposal above %d: %v; last: %+v", forecastMin, err, got)
	} else {
		t.Logf("decision record: %+v", got.Status.LastDecision.Steps)
	}
	// The default mode (Auto) applied the floor because its backtest on
	// the backfilled week paid off: every ramp left the reactive path
	// short, and the floor removed part of it. The 3 days end at the
	// history's last point, a minute before the evaluation.
	if got == nil || !hasConditionReason(got, "Forecasting", corev1.ConditionTrue, "ForecastAvailable") {
		t.Errorf("Forecasting condition not True/ForecastAvailable: %+v", got)
	} else if c := forecastingMessage(got); !strings.Contains(c, "backtest over 71h59m0s") || !strings.Contains(c, ": paid off)") {
		t.Errorf("Forecasting message %q does not show the 3-day backtest that paid off", c)
	}

	hpaWrite := waitWrite(t, writes["hpa"], ramp.Add(time.Minute), "the HPA")
	t.Logf("the HPA scaled above %d at %s, %.1f s after the ramp", forecastMin, hpaWrite.Format("15:04:05.000"), hpaWrite.Sub(ramp).Seconds())
	if hpaWrite.Before(ramp) {
		t.Errorf("the HPA scaled at %s, before the ramp at %s", hpaWrite.Format("15:04:05.000"), ramp.Format(time.TimeOnly))
	}
	t.Logf("wall time %v", time.Since(t0).Round(time.Second))
}

// forecastingMessage is the message of a's Forecasting condition.
func forecastingMessage(a *v1alpha1.Autoscaler) string {
	for _, c := range v1alpha1.ToHPAStatus(&a.Status).Conditions {
		if c.Type == "Forecasting" {
			return c.Message
		}
	}
	return ""
}

// hasForecastStep reports whether rec has a Forecast step that raised the
// proposal above forecastMin, saying which metric's forecast did.
func hasForecastStep(rec *v1alpha1.DecisionRecord) bool {
	for _, s := range rec.Steps {
		if s.Stage == "Forecast" && s.To > forecastMin && s.From < s.To && strings.Contains(s.Message, "forecast of "+QueueGauge) {
			return true
		}
	}
	return false
}

// waitWrite returns the time ch delivers, failing the test at deadline.
func waitWrite(t *testing.T, ch <-chan time.Time, deadline time.Time, who string) time.Time {
	t.Helper()
	select {
	case w := <-ch:
		return w
	case <-time.After(time.Until(deadline)):
		t.Fatalf("%s did not scale above %d by %s", who, forecastMin, deadline.Format(time.TimeOnly))
		return time.Time{}
	}
}

// firstScaleAbove watches the Deployment and sends the time its
// spec.replicas first exceeds floor (as soon as the write is seen).
func firstScaleAbove(ctx context.Context, client kubernetes.Interface, ns, name string, floor int32, ch chan<- time.Time) {
	for ctx.Err() == nil {
		w, err := client.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && ptr.Deref(d.Spec.Replicas, 0) > floor {
				w.Stop()
				ch <- time.Now()
				return
			}
		}
	}
}

// createForecastDeployment creates a Deployment of forecastMin pods on a
// kwok node, once the namespace's default ServiceAccount exists.
func createForecastDeployment(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := cluster.WaitDefaultServiceAccount(ctx, client, ns); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](forecastMin),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:    cluster.NodeName(0),
					Tolerations: []corev1.Toleration{{Key: cluster.KwokNodeAnnotation, Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s/%s: %v", ns, name, err)
	}
}

// testLog writes the cluster's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
