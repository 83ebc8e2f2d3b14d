package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/server"
	"github.com/ebbflow/ebbflow/test/authproxy"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// backendRulesYAML serves worker_inflight from the default backend and
// queue_messages_ready from the "team" backend; both Prometheus servers have a
// worker_inflight series, so a rule reading the wrong backend gives other values.
const backendRulesYAML = `
rules:
- seriesQuery: '{__name__=~"^worker_.*",namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  backend: team
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

// TestSeveralBackends runs one adapter against two real Prometheus servers, the
// second behind a TLS proxy demanding a token (given in the backends file only):
// each rule's metrics come from its backend, and stopping one Prometheus fails
// only its metrics, with the generic 500, while the other's are served and its
// discovery refreshed.
func TestSeveralBackends(t *testing.T) {
	ctx := ctxFor(t, 3*time.Minute)
	expA, expB := exporter.New(), exporter.New()
	expA.Start(t)
	expB.Start(t)
	expA.SetGauge("worker_inflight", map[string]string{"namespace": "ns1", "pod": "w-0"}, 3)
	expB.SetGauge("worker_inflight", map[string]string{"namespace": "ns1", "pod": "w-0"}, 999)
	expB.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 42)
	srvA := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{Addr: expA.Addr(), Job: "a", HonorLabels: true}}})
	srvB := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{Addr: expB.Addr(), Job: "b", HonorLabels: true}}})
	for _, s := range []*promtest.Server{srvA, srvB} {
		if _, err := s.WaitForVector(ctx, `worker_inflight`, func(v model.Vector) bool { return len(v) == 1 }); err != nil {
			t.Fatalf("prometheus never scraped: %v\n%s", err, s.LogTail(20))
		}
	}
	const token = "team-token"
	proxy := authproxy.Start(t, srvB.URL(), authproxy.Options{Token: token})
	s := newBackendStack(t, srvA.URL(), fmt.Sprintf(`
backends:
- name: team
  url: %s
  caFile: %s
  tokenFile: %s
  headers: {X-Scope-OrgID: team}
`, proxy.URL, proxy.CAFile, writeFile(t, "token", []byte(token))))
	s.lister.Objects = append(s.lister.Objects, objfake.Object{Resource: pods, Namespace: "ns1", Name: "w-0"})
	mustf(t, s.disc.Relist(ctx) == nil, "relist failed")

	const podPath = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/w-0/worker_inflight"
	const queuePath = "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns1/queue_messages_ready"
	var pod cmv1beta2.MetricValueList
	mustf(t, s.get(t, podPath, &pod) == 200 && len(pod.Items) == 1 && pod.Items[0].Value.Value() == 3, "default backend: %+v", pod.Items)
	var queue emv1beta1.ExternalMetricValueList
	mustf(t, s.get(t, queuePath, &queue) == 200 && len(queue.Items) == 1 && queue.Items[0].Value.Value() == 42, "team backend: %+v", queue.Items)
	mustf(t, proxy.Rejected() == 0, "the proxy rejected %d requests: the team backend's token was not sent", proxy.Rejected())

	// The team Prometheus goes down: only its metric fails.
	srvB.Stop()
	mustf(t, s.get(t, queuePath, nil) == 500, "team backend down: want 500")
	body := s.body(t, queuePath)
	mustf(t, !strings.Contains(body, proxy.URL) && !strings.Contains(body, "127.0.0.1"), "500 leaks the backend address: %s", body)
	mustf(t, s.get(t, podPath, &pod) == 200 && pod.Items[0].Value.Value() == 3, "default backend failed while team is down: %+v", pod.Items)
	// Discovery keeps refreshing the default backend and keeps team's last good metrics.
	expA.SetGauge("worker_queued", map[string]string{"namespace": "ns1", "pod": "w-0"}, 1)
	if _, err := srvA.WaitForVector(ctx, `worker_queued`, func(v model.Vector) bool { return len(v) == 1 }); err != nil {
		t.Fatal(err)
	}
	err := s.disc.Relist(ctx)
	mustf(t, err != nil && strings.Contains(err.Error(), `backend "team"`), "relist with team down: %v", err)
	_, ok := s.disc.Registry().External("queue_messages_ready")
	mustf(t, ok, "team's last good discovery was dropped")
	_, ok = s.disc.Registry().Custom(customInfo("worker_queued"))
	mustf(t, ok, "default backend's discovery not refreshed while team is down")
	mustf(t, s.gauge(t, "ebbflow_adapter_discovery_last_success_timestamp_seconds", "default") > 0, "no relist success recorded for the default backend")
	mustf(t, s.gauge(t, "ebbflow_adapter_discovery_series", "team") == 1, "team's series gauge not kept at its last good value")

	mustf(t, srvB.Restart(ctx) == nil, "restart failed")
	mustf(t, s.get(t, queuePath, &queue) == 200 && queue.Items[0].Value.Value() == 42, "no recovery: %+v", queue.Items)
}

// backendStack is a stack whose clients are built from flags, as the adapter does.
type backendStack struct {
	*stack
	reg *prometheus.Registry
}

// gauge returns the value of the gauge name{backend=backend}, or -1.
func (s *backendStack) gauge(t *testing.T, name, backend string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "backend" && l.GetValue() == backend {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// body returns the body of GET path.
func (s *backendStack) body(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(s.server.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func newBackendStack(t *testing.T, defaultURL, backendsYAML string) *backendStack {
	t.Helper()
	o := server.NewOptions()
	fs := pflag.NewFlagSet("ebbflow-adapter", pflag.ContinueOnError)
	o.AddFlags(fs)
	file := filepath.Join(t.TempDir(), "backends.yaml")
	if err := os.WriteFile(file, []byte(backendsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--prometheus-url=" + defaultURL, "--prometheus-backends-file=" + file, "--prometheus-timeout=5s"}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	guards, err := prom.NewGuardMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	clients, names, err := prom.LoadBackendClients(o.BackendsFile, prom.BackendDefaults{
		Timeout: o.PrometheusTimeout, MaxConcurrent: o.MaxConcurrentQueries,
		MaxResponseBytes: o.MaxResponseBytes, DisableHTTP2: o.Transport.DisableHTTP2,
	})
	if err != nil {
		t.Fatal(err)
	}
	named := guards.GuardBackends(clients)
	hc, err := prom.NewHTTPClient(defaultURL, nil, prom.VerbGET)
	if err != nil {
		t.Fatal(err)
	}
	def := guards.Guard(hc, prom.GuardOptions{MaxConcurrent: 4, Timeout: 5 * time.Second}, rulefile.DefaultBackend)
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.ParseWith([]byte(backendRulesYAML), rules.Options{Mapper: mapper, Backends: names})
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.New(discovery.Options{Client: def, Backends: named, Scope: discovery.MapperScope{Mapper: mapper}, MaxAge: 10 * time.Minute, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	disc.SetRules(set.Rules)
	lister := &objfake.Lister{}
	prov, err := provider.New(provider.Options{Prom: def, Backends: named, Discovery: disc, Lister: lister, Mapper: mapper, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{disc: disc, lister: lister, handler: apiHandler(t, prov)}
	s.server = httptest.NewServer(s.handler)
	t.Cleanup(s.server.Close)
	return &backendStack{stack: s, reg: reg}
}
