package storetest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/test/adaptertest"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// kinds are the stores every test runs against.
var kinds = []Kind{Mimir, VictoriaMetrics}

// rulesYAML are prometheus-adapter rules over the workload's series: a
// counter turned into a rate per pod, a gauge per pod, a queue as an
// external metric, and kube-prometheus' resourceRules over cadvisor's shape.
// Rates are over 15 s (15 scrapes), so that a test waits 15 s for full
// windows rather than a minute.
var rulesYAML = `
rules:
- seriesQuery: '{__name__=~"^http_requests_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[15s])) by (<<.GroupBy>>)'
# The same rate over a window that has surely arrived: only pods whose newest
# sample is at most 5 s old, and the window ending 5 s ago. A store fed by
# remote write gets the newest samples late (in order per series): a window
# ending now can lack its last seconds and read low, most of all while the
# writers catch up after an outage (Mimir after a restart).
- seriesQuery: '{__name__=~"^http_requests_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second_fresh"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[15s] offset 5s)) by (<<.GroupBy>>) and on(<<.GroupBy>>) (max by (<<.GroupBy>>) (time() - timestamp(<<.Series>>{<<.LabelMatchers>>})) < 5)'
# The fresh rate, and only over a complete window: at least 14 of the 15
# samples a 1 s scrape puts in 15 s. Freshness says the writers caught up;
# it cannot see samples the writers dropped (a hole in the window, the
# newest ones present), over which rate reads low.
- seriesQuery: '{__name__=~"^http_requests_total$",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  name: {matches: "^(.*)_total$", as: "${1}_per_second_complete"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[15s] offset 5s)) by (<<.GroupBy>>) and on(<<.GroupBy>>) (max by (<<.GroupBy>>) (time() - timestamp(<<.Series>>{<<.LabelMatchers>>})) < 5) and on(<<.GroupBy>>) (min by (<<.GroupBy>>) (count_over_time(<<.Series>>{<<.LabelMatchers>>}[15s] offset 5s)) >= 14)'
- seriesQuery: 'worker_inflight{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'http_hits{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      service: {resource: service}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
` + adaptertest.ResourceRules(15*time.Second)

// podCores is the CPU each pod of ns1 uses (one container each), in cores.
var podCores = []float64{0.2, 0.4, 0.8}

// workload publishes the series the rules read: web-i of ns1 serves
// 10·(i+1) requests per second, worker-i has i+1 requests in flight, the
// orders queue holds 250 messages, pods web-0..2 use podCores and 10 MB per
// 0.1 core. It stops with the test.
func workload(t *testing.T, exp *exporter.Exporter) {
	for i := range 5 {
		exp.SetGauge("worker_inflight", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("worker-%d", i)}, float64(i+1))
	}
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 250)
	for i, c := range podCores {
		exp.SetGauge("container_memory_working_set_bytes", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("web-%d", i), "container": "app"}, c*1e8)
	}
	exp.SetGauge("node_memory_working_set_bytes", map[string]string{"node": "n1"}, 3e9)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		// Counters grow by the time that passed, not by ticks: a tick
		// delayed on a busy machine must not lower the true rate.
		const tick = 100 * time.Millisecond
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		last := time.Now()
		for {
			now := time.Now()
			dt := now.Sub(last).Seconds()
			last = now
			for i := range 5 {
				exp.AddCounter("http_requests_total", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("web-%d", i)}, 10*float64(i+1)*dt)
			}
			for i, c := range podCores {
				exp.AddCounter("container_cpu_usage_seconds_total", map[string]string{"namespace": "ns1", "pod": fmt.Sprintf("web-%d", i), "container": "app"}, c*dt)
			}
			exp.AddCounter("node_cpu_usage_seconds_total", map[string]string{"node": "n1"}, 2*dt)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// env is one store fed by a Prometheus scraping the workload.
type env struct {
	store *Store
	prom  *promtest.Server
	exp   *exporter.Exporter
}

// startStore builds (or finds cached) the store's binary and starts it in a
// test directory; a clean-up stops it and, if the test failed, logs its tail.
func startStore(t *testing.T, k Kind, extraArgs ...string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bin, err := buildtools.Path(ctx, os.Stderr, string(k))
	if err != nil {
		t.Fatalf("hack/build-tools.sh %s: %v", k, err)
	}
	s, err := Start(ctx, k, Options{Binary: bin, Dir: t.TempDir(), ExtraArgs: extraArgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", s.LogPath(), s.LogTail(40))
		}
		s.Close()
	})
	t.Logf("%s ready at %s after %v", k, s.QueryURL(), s.ReadyAfter())
	return s
}

// startEnv starts store k, the workload and a Prometheus remote-writing
// everything it scrapes to the store, and waits until the store holds a full
// rate window of every pod, also 5 s ago (PromQL's rate over a window only partly filled
// is lower than the true rate).
func startEnv(t *testing.T, k Kind, extraArgs ...string) *env {
	t.Helper()
	s := startStore(t, k, extraArgs...)
	exp := exporter.New()
	exp.Start(t)
	workload(t, exp)
	// Prometheus 3: Debian's Prometheus 2.42 sends no remote_write headers
	// (Mimir answers 401 "no org id" without its tenant).
	p := promtest.Start(t, promtest.Options{
		Prometheus3: true,
		Targets:     []promtest.Target{{Addr: exp.Addr(), Job: "app", HonorLabels: true}},
		RemoteWrite: []promtest.RemoteWrite{{URL: s.WriteURL(), Headers: s.Headers()}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.WaitForVector(ctx, `count_over_time(http_requests_total[21s]) >= 20`, func(v model.Vector) bool { return len(v) == 5 }); err != nil {
		t.Fatalf("remote write never reached the store: %v\nprometheus:\n%s", err, p.LogTail(20))
	}
	return &env{store: s, prom: p, exp: exp}
}

// adapterClient is the adapter's Prometheus client for the store as
// --prometheus-url and --prometheus-header make it (the tenant for Mimir);
// headers, if given, replace the store's.
func adapterClient(t *testing.T, s *Store, headers ...string) *prom.HTTPClient {
	t.Helper()
	o := prom.NewConnectionOptions(s.QueryURL())
	o.PrometheusHeaders = headers
	if headers == nil {
		for k, v := range s.Headers() {
			o.PrometheusHeaders = append(o.PrometheusHeaders, k+"="+v)
		}
	}
	if errs := o.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	c, err := o.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stack is the adapter over one store: custom, external and metrics.k8s.io
// behind the real API handlers.
type stack struct {
	disc     *discovery.Discoverer
	metrics  *httptest.Server
	resource *httptest.Server
}

var pods = schema.GroupResource{Resource: "pods"}

// newStack wires the adapter as the server does (guarded client, discovery,
// providers) over client, relists once and serves it.
func newStack(t *testing.T, client *prom.HTTPClient) *stack {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse([]byte(rulesYAML), mapper)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	guard := adaptertest.Guard(t, client, prom.GuardOptions{MaxConcurrent: 4, Timeout: 30 * time.Second}, reg)
	disc, err := discovery.New(discovery.Options{Client: guard, Scope: discovery.MapperScope{Mapper: mapper}, MaxAge: time.Hour, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	disc.SetRules(set.Rules)
	lister := &objfake.Lister{}
	for i := range 5 {
		lister.Objects = append(lister.Objects,
			objfake.Object{Resource: pods, Namespace: "ns1", Name: fmt.Sprintf("web-%d", i), Labels: map[string]string{"app": "web"}},
			objfake.Object{Resource: pods, Namespace: "ns1", Name: fmt.Sprintf("worker-%d", i), Labels: map[string]string{"app": "worker"}})
	}
	prov, err := provider.New(provider.Options{Prom: guard, Discovery: disc, Lister: lister, Mapper: mapper, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := provider.NewResource(provider.ResourceOptions{Prom: guard, Registerer: reg}, set.Resource)
	if err != nil {
		t.Fatal(err)
	}
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range 4 { // web-3 has no samples
		if err := podIdx.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: fmt.Sprintf("web-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	nodeIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := nodeIdx.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	s := &stack{
		disc:     disc,
		metrics:  httptest.NewServer(adaptertest.MetricsHandler(t, prov)),
		resource: httptest.NewServer(adaptertest.ResourceHandler(t, res, podIdx, nodeIdx)),
	}
	t.Cleanup(s.metrics.Close)
	t.Cleanup(s.resource.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := disc.Relist(ctx); err != nil {
		t.Fatalf("discovery against the store: %v", err)
	}
	return s
}

// get fetches url and decodes a 200 answer into out; it returns the status
// code (0 when the request failed).
func get(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Logf("GET %s: %v", url, err)
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := jsonDecode(resp.Body, out); err != nil {
			t.Fatalf("decode %s: %v", url, err)
		}
	}
	return resp.StatusCode
}

// getQuiet is get without a test: the status code, 0 when the request
// failed; out is decoded from a 200 answer.
func getQuiet(url string, out any) int {
	resp, err := loopback.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := jsonDecode(resp.Body, out); err != nil {
			return -1
		}
	}
	return resp.StatusCode
}
