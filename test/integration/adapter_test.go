package integration

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

var (
	pods     = schema.GroupResource{Resource: "pods"}
	services = schema.GroupResource{Resource: "services"}
)

// workload publishes the series of a small namespace: five web pods serving traffic
// (counters that keep growing), five workers with in-flight gauges, and two queues.
func workload(t *testing.T, exp *exporter.Exporter) {
	for i := range 5 {
		exp.SetGauge("worker_inflight", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("worker-%d", i)}, float64(i+1))
	}
	exp.SetGauge("worker_inflight", map[string]string{"namespace": "ns2", "pod": "worker-0"}, 100)
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 250)
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "emails"}, 7)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			for i := range 5 {
				exp.AddCounter("http_requests_total", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("web-%d", i), "service": "web"}, float64(i+1))
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

func TestAdapterAgainstPrometheus(t *testing.T) {
	exp := exporter.New()
	exp.Start(t)
	workload(t, exp)
	srv := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{Addr: exp.Addr(), Job: "app", HonorLabels: true}}})
	ctx := ctxFor(t, 3*time.Minute)
	if _, err := srv.WaitForVector(ctx, `sum(rate(http_requests_total[1m])) by (pod)`, func(v model.Vector) bool { return len(v) == 5 }); err != nil {
		t.Fatalf("prometheus never had rates: %v\n%s", err, srv.LogTail(20))
	}
	s := newStack(t, srv.URL(), rulestest.Data(t, rulestest.Users), 2)
	for i := range 5 {
		s.lister.Objects = append(s.lister.Objects,
			objfake.Object{Resource: pods, Namespace: "ns1", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			objfake.Object{Resource: pods, Namespace: "ns1", Name: fmt.Sprintf("worker-%d", i), Labels: map[string]string{"app": "worker"}})
	}
	s.lister.Objects = append(s.lister.Objects, objfake.Object{Resource: services, Namespace: "ns1", Name: "web"})
	if err := s.disc.Relist(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("discovery lists the rule-derived metrics", func(t *testing.T) { testDiscovery(t, s) })
	t.Run("pods equal direct PromQL", func(t *testing.T) { testPods(t, s, srv) })
	t.Run("namespace and object equal direct PromQL", func(t *testing.T) { testObjects(t, s, srv) })
	t.Run("external equals direct PromQL", func(t *testing.T) { testExternal(t, s) })
	t.Run("namespace-wide query gives identical answers", func(t *testing.T) { testNamespaceQuery(t, s, srv) })
	t.Run("hostile selectors never reach Prometheus", func(t *testing.T) { testHostile(t, s) })
	t.Run("new metric without waiting for a relist", func(t *testing.T) { testOnDemand(t, s, exp, srv) })
	t.Run("prometheus down gives 500 and recovers", func(t *testing.T) { testOutage(t, s, srv) })
}

func testDiscovery(t *testing.T, s *stack) {
	var custom metav1.APIResourceList
	mustf(t, s.get(t, "/apis/custom.metrics.k8s.io/v1beta2", &custom) == 200, "custom discovery failed")
	have := map[string]bool{}
	for _, r := range custom.APIResources {
		have[r.Name] = true
	}
	for _, want := range []string{"pods/http_requests_per_second", "namespaces/http_requests_per_second", "services/http_requests_per_second", "pods/worker_inflight", "namespaces/worker_inflight"} {
		mustf(t, have[want], "custom discovery lacks %s: %v", want, have)
	}
	var external metav1.APIResourceList
	mustf(t, s.get(t, "/apis/external.metrics.k8s.io/v1beta1", &external) == 200, "external discovery failed")
	mustf(t, len(external.APIResources) == 1 && external.APIResources[0].Name == "queue_messages_ready", "external discovery = %+v", external.APIResources)
}

// direct re-evaluates the adapter's last query at the time of its answer and returns
// the samples by the value of label.
func direct(t *testing.T, srv *promtest.Server, rec recorded, label string) map[string]float64 {
	t.Helper()
	mustf(t, len(rec.answer) > 0, "no recorded answer")
	at := rec.answer[0].Timestamp.Time()
	v, _, err := srv.API().Query(context.Background(), rec.query, at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, smp := range v.(model.Vector) {
		out[string(smp.Metric[model.LabelName(label)])] = float64(smp.Value)
	}
	return out
}

func milli(f float64) int64 { return int64(math.Round(f * 1000)) }

func testPods(t *testing.T, s *stack, srv *promtest.Server) {
	var list cmv1beta2.MetricValueList
	mustf(t, s.get(t, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/http_requests_per_second?labelSelector=app%3Dweb", &list) == 200, "request failed")
	want := direct(t, srv, s.rec.last(), "pod")
	mustf(t, len(list.Items) == 5 && len(want) == 5, "items %d, direct %d", len(list.Items), len(want))
	for _, it := range list.Items {
		mustf(t, it.Value.MilliValue() == milli(want[it.DescribedObject.Name]), "%s: adapter %s, PromQL %g", it.DescribedObject.Name, it.Value.String(), want[it.DescribedObject.Name])
		mustf(t, it.Value.MilliValue() > 0 && it.DescribedObject.Kind == "Pod", "item %+v", it)
	}
	mustf(t, strings.Contains(s.rec.last().query, `pod=~"web-0|web-1|web-2|web-3|web-4"`) || strings.Contains(s.rec.last().query, `pod!=""`), "query %q", s.rec.last().query)
}

func testObjects(t *testing.T, s *stack, srv *promtest.Server) {
	var ns cmv1beta2.MetricValueList
	mustf(t, s.get(t, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/metrics/http_requests_per_second", &ns) == 200, "namespace request failed")
	want := direct(t, srv, s.rec.last(), "namespace")
	mustf(t, len(ns.Items) == 1 && ns.Items[0].Value.MilliValue() == milli(want["ns1"]), "namespace: %+v vs %v", ns.Items, want)

	var svc cmv1beta2.MetricValueList
	mustf(t, s.get(t, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/services/web/http_requests_per_second", &svc) == 200, "service request failed")
	want = direct(t, srv, s.rec.last(), "service")
	mustf(t, len(svc.Items) == 1 && svc.Items[0].DescribedObject.Kind == "Service" && svc.Items[0].Value.MilliValue() == milli(want["web"]), "service: %+v vs %v", svc.Items, want)
}

func testExternal(t *testing.T, s *stack) {
	var list emv1beta1.ExternalMetricValueList
	mustf(t, s.get(t, "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready?labelSelector=queue%3Dorders", &list) == 200, "external request failed")
	mustf(t, len(list.Items) == 1 && list.Items[0].Value.Value() == 250 && list.Items[0].MetricLabels["queue"] == "orders", "items %+v", list.Items)
	mustf(t, s.rec.last().query == `sum(queue_messages_ready{queue="orders"}) by (queue)`, "query %q", s.rec.last().query)
	var all emv1beta1.ExternalMetricValueList
	mustf(t, s.get(t, "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready", &all) == 200, "external request failed")
	mustf(t, len(all.Items) == 2, "items %+v", all.Items)
}

func testNamespaceQuery(t *testing.T, s *stack, srv *promtest.Server) {
	regex := newStack(t, srv.URL(), rulestest.Data(t, rulestest.Users), -1)
	regex.lister.Objects = s.lister.Objects
	mustf(t, regex.disc.Relist(context.Background()) == nil, "relist")
	const path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/worker_inflight?labelSelector=app%3Dworker"
	var byNamespace, byNames cmv1beta2.MetricValueList
	mustf(t, s.get(t, path, &byNamespace) == 200, "namespace-wide request failed")
	mustf(t, regex.get(t, path, &byNames) == 200, "regex request failed")
	mustf(t, strings.Contains(s.rec.last().query, `pod!=""`), "threshold 2 did not query by namespace: %q", s.rec.last().query)
	mustf(t, strings.Contains(regex.rec.last().query, `pod=~"worker-0|worker-1|worker-2|worker-3|worker-4"`), "regex query %q", regex.rec.last().query)
	mustf(t, len(byNamespace.Items) == 5 && len(byNames.Items) == 5, "items %d vs %d", len(byNamespace.Items), len(byNames.Items))
	for i := range byNames.Items {
		a, b := byNamespace.Items[i], byNames.Items[i]
		mustf(t, a.DescribedObject == b.DescribedObject && a.Value.Cmp(b.Value) == 0, "item %d differs: %+v vs %+v", i, a, b)
	}
}

func testHostile(t *testing.T, s *stack) {
	before := len(s.rec.all())
	for _, sel := range []string{
		`a in (x"} or vector(1) or x{b=")`,
		`a=x"} or vector(1) or x{b="`,
		`app.kubernetes.io/name=web`,
		`code>4`,
		"a in (" + strings.Repeat("abcdefghij,", 600) + "x)",
	} {
		path := "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/http_requests_per_second?metricLabelSelector=" + url.QueryEscape(sel)
		mustf(t, s.get(t, path, nil) == 400, "selector %.40q: want 400", sel)
		path = "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready?labelSelector=" + url.QueryEscape(sel)
		mustf(t, s.get(t, path, nil) == 400, "external selector %.40q: want 400", sel)
	}
	mustf(t, len(s.rec.all()) == before, "hostile selectors reached Prometheus: %v", s.rec.all()[before:])
}

func testOnDemand(t *testing.T, s *stack, exp *exporter.Exporter, srv *promtest.Server) {
	ctx := ctxFor(t, 2*time.Minute)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			exp.AddCounter("http_logins_total", map[string]string{"namespace": "ns1", "pod": "web-0", "service": "web"}, 1)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	if _, err := srv.WaitForVector(ctx, `rate(http_logins_total[1m])`, func(v model.Vector) bool { return len(v) == 1 }); err != nil {
		t.Fatal(err)
	}
	_, known := s.disc.Registry().Custom(customInfo("http_logins_per_second"))
	mustf(t, !known, "metric registered before any request; the test proves nothing")
	var v cmv1beta2.MetricValueList
	mustf(t, s.get(t, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/web-0/http_logins_per_second", &v) == 200, "new metric not served on demand")
	mustf(t, len(v.Items) == 1 && v.Items[0].Value.MilliValue() > 0, "items %+v", v.Items)
}

func testOutage(t *testing.T, s *stack, srv *promtest.Server) {
	const path = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/worker_inflight"
	srv.Stop()
	mustf(t, s.get(t, path, nil) == 500, "want 500 while Prometheus is down")
	mustf(t, s.disc.Relist(context.Background()) != nil, "relist succeeded with Prometheus down")
	_, ok := s.disc.Registry().Custom(customInfo("worker_inflight"))
	mustf(t, ok, "failed relist dropped the registry")
	ctx := ctxFor(t, time.Minute)
	mustf(t, srv.Restart(ctx) == nil, "restart failed")
	var list cmv1beta2.MetricValueList
	mustf(t, s.get(t, path, &list) == 200 && len(list.Items) == 5, "no recovery after restart: %+v", list.Items)
}

func TestBadRuleFileErrors(t *testing.T) {
	bad := []byte(`
rules:
- seriesQuery: 'http_requests_total'
  resources: {template: "<<.Group>>"}
  name: {matches: "^(a)(b)$"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
externalRules:
- seriesQuery: 'queue_messages_ready'
  metricsQuery: 'sum(<<.Series>>)'
`)
	_, err := rules.ParseFileWith(writeFile(t, "bad.yaml", bad), rules.Options{Mapper: rulefile.DefaultRESTMapper()})
	mustf(t, err != nil, "bad file accepted")
	for _, want := range []string{
		`rules[0] (seriesQuery "http_requests_total"): resources.template`,
		`rules[0] (seriesQuery "http_requests_total"): name.as`,
	} {
		mustf(t, strings.Contains(err.Error(), want), "error does not name %q:\n%v", want, err)
	}
	// A namespaced external rule that maps no label to namespaces loads, as in
	// prometheus-adapter (rulefile.Warnings reports it; its namespaced requests fail).
	mustf(t, !strings.Contains(err.Error(), "externalRules[0]"), "the external rule was refused:\n%v", err)
}
