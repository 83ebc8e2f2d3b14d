package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/poll"
)

func jsonDecode(r io.Reader, out any) error {
	return json.NewDecoder(io.LimitReader(r, 16<<20)).Decode(out)
}

// TestAdapterAgainstStores runs the adapter's real-Prometheus cases against
// each store fed by Prometheus' remote write: discovery, custom metrics per
// pod and per object, external metrics, metrics.k8s.io, a history of four
// days read as the autoscaler's forecast reads it, and (Mimir) tenants.
func TestAdapterAgainstStores(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			e := startEnv(t, k)
			histStart := pushHistory(t, e.store)
			s := newStack(t, adapterClient(t, e.store))
			t.Run("discovery", func(t *testing.T) { testDiscovery(t, s) })
			t.Run("custom per pod and object", func(t *testing.T) { testCustom(t, s) })
			t.Run("external", func(t *testing.T) { testExternal(t, s) })
			t.Run("metrics.k8s.io", func(t *testing.T) { testResource(t, s) })
			t.Run("history for forecasts", func(t *testing.T) { testHistory(t, s, histStart) })
			t.Run("object history", func(t *testing.T) { testObjectHistory(t, s, histStart) })
			if k == Mimir {
				t.Run("another tenant sees nothing", func(t *testing.T) { testOtherTenant(t, e.store) })
			}
		})
	}
}

func testDiscovery(t *testing.T, s *stack) {
	var custom metav1.APIResourceList
	if code := get(t, s.metrics.URL+"/apis/custom.metrics.k8s.io/v1beta2", &custom); code != 200 {
		t.Fatalf("custom discovery: %d", code)
	}
	have := map[string]bool{}
	for _, r := range custom.APIResources {
		have[r.Name] = true
	}
	for _, want := range []string{"pods/http_requests_per_second", "pods/http_requests_per_second_fresh", "pods/http_requests_per_second_complete", "namespaces/http_requests_per_second", "pods/worker_inflight", "namespaces/worker_inflight"} {
		if !have[want] {
			t.Errorf("custom discovery lacks %s: %v", want, have)
		}
	}
	var external metav1.APIResourceList
	if code := get(t, s.metrics.URL+"/apis/external.metrics.k8s.io/v1beta1", &external); code != 200 {
		t.Fatalf("external discovery: %d", code)
	}
	if len(external.APIResources) != 1 || external.APIResources[0].Name != "queue_messages_ready" {
		t.Errorf("external discovery = %+v", external.APIResources)
	}
}

// near reports whether got is within 10% of want (rates: the store's rate
// over a scrape window, not the exporter's exact rate).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.1*want }

func testCustom(t *testing.T, s *stack) {
	const base = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1"
	var list cmv1beta2.MetricValueList
	if code := get(t, s.metrics.URL+base+"/pods/*/http_requests_per_second?labelSelector=app%3Dweb", &list); code != 200 {
		t.Fatalf("pods rate: %d", code)
	}
	if len(list.Items) != 5 {
		t.Fatalf("pods rate: %d items, want 5", len(list.Items))
	}
	for _, it := range list.Items {
		var i int
		fmt.Sscanf(it.DescribedObject.Name, "web-%d", &i)
		if got, want := it.Value.AsApproximateFloat64(), 10*float64(i+1); !near(got, want) {
			t.Errorf("%s: %g requests/s, want about %g", it.DescribedObject.Name, got, want)
		}
	}
	var fresh cmv1beta2.MetricValueList
	if code := get(t, s.metrics.URL+base+"/pods/*/http_requests_per_second_fresh?labelSelector=app%3Dweb", &fresh); code != 200 || len(fresh.Items) != 5 {
		t.Errorf("pods' fresh rate: %d, %d items, want 5", code, len(fresh.Items))
	}
	var complete cmv1beta2.MetricValueList
	if code := get(t, s.metrics.URL+base+"/pods/*/http_requests_per_second_complete?labelSelector=app%3Dweb", &complete); code != 200 || len(complete.Items) != 5 {
		t.Errorf("pods' rate over a complete window: %d, %d items, want 5", code, len(complete.Items))
	}
	for _, it := range complete.Items {
		var i int
		fmt.Sscanf(it.DescribedObject.Name, "web-%d", &i)
		if got, want := it.Value.AsApproximateFloat64(), 10*float64(i+1); !near(got, want) {
			t.Errorf("%s over a complete window: %g requests/s, want about %g", it.DescribedObject.Name, got, want)
		}
	}
	var one cmv1beta2.MetricValueList
	if code := get(t, s.metrics.URL+base+"/pods/worker-2/worker_inflight", &one); code != 200 || len(one.Items) != 1 || one.Items[0].Value.Value() != 3 {
		t.Errorf("worker-2 in flight: %d %+v, want 3", code, one.Items)
	}
	var ns cmv1beta2.MetricValueList
	if code := get(t, s.metrics.URL+"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/metrics/worker_inflight", &ns); code != 200 || len(ns.Items) != 1 || ns.Items[0].Value.Value() != 15 {
		t.Errorf("namespace ns1 in flight: %d %+v, want 15", code, ns.Items)
	}
}

func testExternal(t *testing.T, s *stack) {
	var list emv1beta1.ExternalMetricValueList
	u := s.metrics.URL + "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready?labelSelector=" + url.QueryEscape("queue=orders")
	if code := get(t, u, &list); code != 200 {
		t.Fatalf("external: %d", code)
	}
	if len(list.Items) != 1 || list.Items[0].Value.Value() != 250 {
		t.Errorf("orders queue = %+v, want 250", list.Items)
	}
}

func testResource(t *testing.T, s *stack) {
	var list metricsv1beta1.PodMetricsList
	if code := get(t, s.resource.URL+"/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods", &list); code != 200 {
		t.Fatalf("pod metrics: %d", code)
	}
	if len(list.Items) != len(podCores) {
		t.Fatalf("pod metrics for %d pods, want %d (web-3 has no samples)", len(list.Items), len(podCores))
	}
	for _, pm := range list.Items {
		var i int
		fmt.Sscanf(pm.Name, "web-%d", &i)
		if len(pm.Containers) != 1 {
			t.Fatalf("%s: %d containers", pm.Name, len(pm.Containers))
		}
		u := pm.Containers[0].Usage
		cpu, mem := u[corev1.ResourceCPU], u[corev1.ResourceMemory]
		if !near(cpu.AsApproximateFloat64(), podCores[i]) || mem.Value() != int64(podCores[i]*1e8) {
			t.Errorf("%s: cpu %s memory %s, want about %g cores and %d bytes", pm.Name, cpu.String(), mem.String(), podCores[i], int64(podCores[i]*1e8))
		}
	}
	var nm metricsv1beta1.NodeMetrics
	if code := get(t, s.resource.URL+"/apis/metrics.k8s.io/v1beta1/nodes/n1", &nm); code != 200 {
		t.Fatalf("node metrics: %d", code)
	}
	if cpu := nm.Usage[corev1.ResourceCPU]; !near(cpu.AsApproximateFloat64(), 2) {
		t.Errorf("node n1 cpu %s, want about 2 cores", cpu.String())
	}
}

// historyRange is the span of the pushed history: four days and an hour.
const historyRange = 4*24*time.Hour + time.Hour

// dailyRamp is the nightly queue's depth at d into the day: 200 from 5
// minutes to 3 hours, else 20 (as test/integration's history case).
func dailyRamp(d time.Duration) float64 {
	if d >= 5*time.Minute && d < 3*time.Hour {
		return 200
	}
	return 20
}

// pushHistory pushes queue_messages_ready{queue="nightly"} every minute over
// historyRange ending now, with the day starting at the last whole minute,
// after Prometheus has already written the present: history that reaches a
// store as a backfill would. It returns that minute.
func pushHistory(t *testing.T, s *Store) time.Time {
	t.Helper()
	at := time.Now().Truncate(time.Minute)
	se := Series{Labels: map[string]string{"__name__": "queue_messages_ready", "queue": "nightly"}}
	for ts := at.Add(-historyRange - 10*time.Minute); !ts.After(at); ts = ts.Add(time.Minute) {
		d := ts.Sub(at) % (24 * time.Hour)
		if d < 0 {
			d += 24 * time.Hour
		}
		se.Samples = append(se.Samples, Sample{T: ts, V: dailyRamp(d)})
	}
	hits := Series{Labels: map[string]string{"__name__": "http_hits", "namespace": "ns1", "service": "api"}}
	for ts := at.Add(-3 * time.Hour); !ts.After(at); ts = ts.Add(time.Minute) {
		hits.Samples = append(hits.Samples, Sample{T: ts, V: apiHits(ts)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Push(ctx, []Series{se, hits}); err != nil {
		t.Fatal(err)
	}
	return at
}

// apiHits is Service api's pushed http_hits at ts.
func apiHits(ts time.Time) float64 { return float64(ts.Unix()/60%7) * 1.5 }

// testObjectHistory reads Service api's history as ebbflow-autoscaler reads
// an Object metric's (custom.metrics.k8s.io, one object by name, with the
// reserved requirements) and checks every point against what was pushed.
func testObjectHistory(t *testing.T, s *stack, at time.Time) {
	cfg := &rest.Config{Host: s.metrics.URL}
	external, err := externalclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := metrics.NewObjectHistoryClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := metrics.NewREST(nil, nil, external).WithObjectHistories(objects, rulefile.DefaultRESTMapper())
	api := autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := client.ObjectHistory(ctx, "ns1", "http_hits", api, labels.Everything(), metrics.HistoryRequest{Range: 2 * time.Hour, Step: time.Minute})
	if err != nil {
		t.Fatalf("object history through the adapter: %v", err)
	}
	compared := 0
	for i, v := range h.Values {
		ts := h.Start.Add(time.Duration(i) * h.Step)
		if ts.After(at) || math.IsNaN(v) {
			continue
		}
		if v != apiHits(ts) {
			t.Fatalf("at %s the history reads %g, pushed %g", ts.Format(time.RFC3339), v, apiHits(ts))
		}
		compared++
	}
	if compared < 115 {
		t.Errorf("only %d points compared (history of %d from %v)", compared, len(h.Values), h.Start)
	}
}

// testHistory reads the nightly queue's history through the external
// metrics API as ebbflow-autoscaler does and checks it against what was
// pushed, then that a forecast from it sees the past days' plateau.
func testHistory(t *testing.T, s *stack, at time.Time) {
	external, err := externalclient.NewForConfig(&rest.Config{Host: s.metrics.URL})
	if err != nil {
		t.Fatal(err)
	}
	client := metrics.NewREST(nil, nil, external)
	req := metrics.HistoryRequest{Range: historyRange, Step: time.Minute}
	sel := labels.SelectorFromSet(labels.Set{"queue": "nightly"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var h forecast.Series
	// The newest pushed minutes may take a moment to be visible.
	poll.Until(t, 2*time.Minute, "history through the adapter", func() error {
		h, err = client.ExternalHistory(ctx, "default", "queue_messages_ready", sel, req)
		if err == nil && len(h.Values) > 0 && h.Start.Add(time.Duration(len(h.Values)-1)*h.Step).After(at.Add(-2*time.Minute)) {
			return nil
		}
		return fmt.Errorf("%v (%d points from %v)", err, len(h.Values), h.Start)
	})
	compared, wrong := 0, 0
	for i, v := range h.Values {
		ts := h.Start.Add(time.Duration(i) * h.Step)
		if math.IsNaN(v) || ts.After(at) {
			continue
		}
		d := ts.Sub(at) % (24 * time.Hour)
		if d < 0 {
			d += 24 * time.Hour
		}
		compared++
		if v != dailyRamp(d) {
			wrong++
			if wrong <= 3 {
				t.Errorf("at %s the history reads %g, pushed %g", ts.Format(time.RFC3339), v, dailyRamp(d))
			}
		}
	}
	if want := int(historyRange/time.Minute) - 10; compared < want {
		t.Errorf("only %d points of the history compared, want at least %d (%d from %v)", compared, want, len(h.Values), h.Start)
	}
	fr := forecast.Request{Now: at, Lead: 45 * time.Minute, Season: forecast.Daily, Method: forecast.SeasonalMax}
	if f := forecast.Of(h, fr); !f.OK || f.Value != 200 {
		t.Errorf("forecast from the store's history: %+v, want the past days' plateau 200", f)
	}
}

// testOtherTenant reads Mimir as another tenant: the adapter's client with
// --prometheus-header=X-Scope-OrgID=other discovers nothing.
func testOtherTenant(t *testing.T, s *Store) {
	c := adapterClient(t, s, "X-Scope-OrgID=other")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := c.Query(ctx, `count({__name__=~"http_requests_total|queue_messages_ready"})`)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 0 {
		t.Errorf("tenant other sees %v", v)
	}
	var seen []string
	err = c.Series(ctx, []string{`{__name__=~".+"}`}, time.Now().Add(-time.Hour), func(name string, _ []string) error {
		seen = append(seen, name)
		return nil
	})
	if err != nil || len(seen) != 0 {
		t.Errorf("tenant other lists series %v (err %v)", seen, err)
	}
}
