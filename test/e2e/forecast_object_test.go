package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// The Object-metric forecast e2e: Service api's hits have read
// objectPast for four days; they read objectNow live.
const (
	objectHits               = "e2e_object_hits"
	objectPast, objectNow    = 100.0, 20.0
	objectService, objectApp = "api", "objforecast"
)

const objectRules = `
rules:
- seriesQuery: 'e2e_object_hits{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      service: {resource: service}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

func objectLabels() map[string]string {
	return map[string]string{"namespace": "default", "service": objectService, "job": "objforecast", "instance": "hits-exporter"}
}

// objectBackfill is four days and two hours of Service api's hits at
// objectPast, one sample a minute up to until.
func objectBackfill(until time.Time) []byte {
	var b strings.Builder
	b.WriteString("# TYPE " + objectHits + " gauge\n")
	l := objectLabels()
	series := fmt.Sprintf(`%s{instance=%q,job=%q,namespace=%q,service=%q}`, objectHits, l["instance"], l["job"], l["namespace"], l["service"])
	for ts := until.Truncate(time.Minute).Add(-(4*24 + 2) * time.Hour); !ts.After(until); ts = ts.Add(time.Minute) {
		fmt.Fprintf(&b, "%s %g %d\n", series, objectPast, ts.Unix())
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// promCount is the value of the instant query q (one series), 0 when
// Prometheus does not answer it.
func promCount(ctx context.Context, promURL, q string) float64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, promURL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil || len(body.Data.Result) != 1 {
		return 0
	}
	v, _ := body.Data.Result[0].Value[1].(string)
	f, _ := strconv.ParseFloat(v, 64)
	return f
}

// TestForecastOnObjectMetric: an Autoscaler whose Object metric (a
// Service's hits, AverageValue 10 a pod) has a daily forecast, on a cluster
// of its own whose Prometheus holds four days of that metric at 100 while
// it reads 20 now. ebbflow-autoscaler reads the Service's history through
// kube-apiserver's aggregation and ebbflow-adapter (custom.metrics.k8s.io,
// one object by name, the history contract): the forecast's floor (10
// replicas) raises the reactive proposal (2, held at minReplicas 6), the
// decision record has the Forecast step naming the metric and the object,
// Forecasting is True, and the Deployment is scaled above 6.
func TestForecastOnObjectMetric(t *testing.T) {
	// Its own cluster: runs beside the other parallel tests.
	t.Parallel()
	e := exporter.New()
	e.Start(t)
	e.SetGauge(objectHits, objectLabels(), objectNow)
	c, ebb := startForecastCluster(t, e.Addr(), "objforecast", cluster.Options{
		RulesYAML:           []byte(objectRules),
		PrometheusRetention: 30 * 24 * time.Hour,
		PrometheusBackfill:  objectBackfill(time.Now()),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns = "default"
	createForecastDeployment(ctx, t, c.Client(), ns, objectApp)
	spec := hpaSpec(forecastMin, forecastMax, nil, autoscalingv2.MetricSpec{
		Type: autoscalingv2.ObjectMetricSourceType,
		Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: objectService},
			Metric:          autoscalingv2.MetricIdentifier{Name: objectHits},
			Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(forecastTarget))},
		},
	})
	spec.ScaleTargetRef.Name = objectApp
	a := &v1alpha1.Autoscaler{ObjectMeta: metav1.ObjectMeta{Name: objectApp}, Spec: v1alpha1test.FromHPASpec(&spec)}
	a.Spec.SyncPeriodSeconds = ptr.To(int32(forecastPeriod / time.Second))
	// SeasonalNaive forecasts the past days' objectPast whatever the live
	// value; LevelCorrected (the default) follows the last 5 minutes, the
	// live objectNow, within minutes.
	// Mode Always: the flat history never left the reactive path short,
	// so the default mode's backtest would hold the floor back.
	a.Spec.Metrics[0].Forecast = &v1alpha1.MetricForecast{Season: v1alpha1.SeasonDaily, Method: v1alpha1.ForecastMethod("SeasonalNaive"), Mode: v1alpha1.ForecastAlways,
		PodStartup: &metav1.Duration{Duration: forecastPodStartup}}
	// The controller reads a history again only every 5 minutes: create the
	// Autoscaler once Prometheus answers with the backfilled days.
	if _, err := pollUntil(time.Minute, func(ctx context.Context) bool {
		return promCount(ctx, c.Prometheus().URL(), "count_over_time("+objectHits+"[4d])") > 4*24*60
	}); err != nil {
		t.Fatalf("Prometheus does not answer the backfilled history: %v", err)
	}
	// The history as the controller reads it, through kube-apiserver's
	// aggregation: the backfilled days are there.
	hc, err := metrics.NewObjectHistoryClient(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	hreq := metrics.HistoryRequest{Range: 4*24*time.Hour + time.Hour, Step: time.Minute}
	h, err := metrics.NewREST(nil, nil, nil).WithObjectHistories(hc, rulefile.DefaultRESTMapper()).ObjectHistory(ctx, ns, objectHits,
		spec.Metrics[0].Object.DescribedObject, labels.Everything(), hreq)
	if err != nil {
		t.Fatalf("object history through kube-apiserver: %v", err)
	}
	t.Logf("object history through kube-apiserver: %d points from %s, first %v", len(h.Values), h.Start.Format(time.RFC3339), h.Values[:min(3, len(h.Values))])
	if time.Since(h.Start) < 4*24*time.Hour || h.Values[0] != objectPast {
		t.Fatalf("object history through kube-apiserver starts %s with %v, want four days of %g", h.Start, h.Values[:min(3, len(h.Values))], objectPast)
	}
	if _, err := ebb.AutoscalingV1alpha1().Autoscalers(ns).Create(ctx, a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler: %v", err)
	}

	var got *v1alpha1.Autoscaler
	var step string
	if _, err := pollUntil(2*time.Minute, func(ctx context.Context) bool {
		got, err = ebb.AutoscalingV1alpha1().Autoscalers(ns).Get(ctx, objectApp, metav1.GetOptions{})
		if err != nil || got.Status.LastDecision == nil {
			return false
		}
		for _, s := range got.Status.LastDecision.Steps {
			if s.Stage == "Forecast" && s.From < s.To && s.To > forecastMin && strings.Contains(s.Message, "forecast of "+objectHits+" on Service/"+objectService) {
				step = fmt.Sprintf("%d → %d: %s", s.From, s.To, s.Message)
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no decision record with a Forecast step of %s on Service/%s raising the proposal above %d: %v; last: %+v", objectHits, objectService, forecastMin, err, got)
	}
	t.Logf("Forecast step %s", step)
	if !hasConditionReason(got, "Forecasting", corev1.ConditionTrue, "ForecastAvailable") {
		t.Errorf("Forecasting condition not True/ForecastAvailable: %+v", got.Status.Conditions)
	}
	if _, err := pollUntil(30*time.Second, func(ctx context.Context) bool {
		d, err := c.Client().AppsV1().Deployments(ns).Get(ctx, objectApp, metav1.GetOptions{})
		return err == nil && ptr.Deref(d.Spec.Replicas, 0) > forecastMin
	}); err != nil {
		t.Errorf("Deployment %s not scaled above %d: %v", objectApp, forecastMin, err)
	}
}
