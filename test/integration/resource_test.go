package integration

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/test/adaptertest"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// resourceRulesYAML is kube-prometheus' shape of resourceRules over kubelet
// /metrics/resource series, CPU over 1m.
var resourceRulesYAML = adaptertest.ResourceRules(time.Minute)

// cadvisor publishes container and node usage: ns1/web-0 (app, sidecar), ns1/web-1,
// ns1/web-2, ns2/web-0 (same name, other namespace), node n1. ns1/web-3 and node n2
// exist in the caches without samples.
func cadvisor(t *testing.T, exp *exporter.Exporter) {
	type ctr struct{ ns, pod, container string }
	cpu := map[ctr]float64{
		{"ns1", "web-0", "app"}: 0.2, {"ns1", "web-0", "sidecar"}: 0.05,
		{"ns1", "web-1", "app"}: 0.4, {"ns1", "web-2", "app"}: 0.8, {"ns2", "web-0", "app"}: 1.6,
	}
	for c := range cpu {
		exp.SetGauge("container_memory_working_set_bytes", map[string]string{"namespace": c.ns, "pod": c.pod, "container": c.container}, 1e6*cpu[c]*10)
	}
	exp.SetGauge("node_memory_working_set_bytes", map[string]string{"node": "n1"}, 3e9)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		const tick = 100 * time.Millisecond
		ticker := time.NewTicker(tick)
		defer ticker.Stop()
		for {
			for c, cores := range cpu {
				exp.AddCounter("container_cpu_usage_seconds_total", map[string]string{"namespace": c.ns, "pod": c.pod, "container": c.container}, cores*tick.Seconds())
			}
			exp.AddCounter("node_cpu_usage_seconds_total", map[string]string{"node": "n1"}, 2*tick.Seconds())
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// resourceStack serves metrics.k8s.io through metrics-server's storage over the
// adapter's ResourceProvider, with caches filled by hand.
type resourceStack struct {
	rec    *recorder
	server *httptest.Server
}

func newResourceStack(t *testing.T, promURL string) *resourceStack {
	t.Helper()
	set, err := rules.Parse([]byte(resourceRulesYAML), rulefile.DefaultRESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	hc, err := prom.NewHTTPClient(promURL, nil, prom.VerbGET)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Client: hc}
	prov, err := provider.NewResource(provider.ResourceOptions{Prom: rec, Registerer: reg}, set.Resource)
	if err != nil {
		t.Fatal(err)
	}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []struct{ ns, name, app string }{{"ns1", "web-0", "web"}, {"ns1", "web-1", "web"}, {"ns1", "web-2", "db"}, {"ns1", "web-3", "web"}, {"ns2", "web-0", "web"}} {
		must(t, pods.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app}}}))
	}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	must(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	must(t, nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}))

	s := &resourceStack{rec: rec, server: httptest.NewServer(adaptertest.ResourceHandler(t, prov, pods, nodes))}
	t.Cleanup(s.server.Close)
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *resourceStack) get(t *testing.T, path string, out any) int {
	return (&stack{server: s.server}).get(t, path, out)
}

func TestResourceMetricsAgainstPrometheus(t *testing.T) {
	exp := exporter.New()
	exp.Start(t)
	cadvisor(t, exp)
	srv := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{Addr: exp.Addr(), Job: "kubelet", HonorLabels: true}}})
	ctx := ctxFor(t, 3*time.Minute)
	if _, err := srv.WaitForVector(ctx, `rate(container_cpu_usage_seconds_total[1m])`, func(v model.Vector) bool { return len(v) == 5 }); err != nil {
		t.Fatalf("prometheus never had rates: %v\n%s", err, srv.LogTail(20))
	}
	s := newResourceStack(t, srv.URL())
	const base = "/apis/metrics.k8s.io/v1beta1"

	t.Run("namespace list equals PromQL at the same time", func(t *testing.T) {
		var list metricsv1beta1.PodMetricsList
		mustf(t, s.get(t, base+"/namespaces/ns1/pods", &list) == http.StatusOK, "list failed")
		mustf(t, podNames(list) == "ns1/web-0 ns1/web-1 ns1/web-2", "pods = %s, want web-3 (no samples) left out", podNames(list))
		checkAgainstPromQL(t, s, srv, list)
	})
	t.Run("label selector", func(t *testing.T) {
		var list metricsv1beta1.PodMetricsList
		mustf(t, s.get(t, base+"/namespaces/ns1/pods?labelSelector=app%3Dweb", &list) == http.StatusOK, "list failed")
		mustf(t, podNames(list) == "ns1/web-0 ns1/web-1", "pods = %s", podNames(list))
	})
	t.Run("all namespaces in one query per resource", func(t *testing.T) {
		before := len(s.rec.all())
		var list metricsv1beta1.PodMetricsList
		mustf(t, s.get(t, base+"/pods", &list) == http.StatusOK, "list failed")
		mustf(t, podNames(list) == "ns1/web-0 ns1/web-1 ns1/web-2 ns2/web-0", "pods = %s", podNames(list))
		mustf(t, len(s.rec.all())-before == 2, "sent %d queries, want 2", len(s.rec.all())-before)
		checkAgainstPromQL(t, s, srv, list)
	})
	t.Run("unknown pod and pod without samples are 404", func(t *testing.T) {
		mustf(t, s.get(t, base+"/namespaces/ns1/pods/nope", nil) == http.StatusNotFound, "unknown pod not 404")
		mustf(t, s.get(t, base+"/namespaces/ns1/pods/web-3", nil) == http.StatusNotFound, "pod without samples not 404")
		var pm metricsv1beta1.PodMetrics
		mustf(t, s.get(t, base+"/namespaces/ns2/pods/web-0", &pm) == http.StatusOK, "get failed")
		q := s.rec.all()
		r := q[len(q)-1]
		if !strings.Contains(r.query, "cpu") {
			r = q[len(q)-2]
		}
		mustf(t, strings.Contains(r.query, `namespace="ns2",pod="web-0"`), "query %s", r.query)
		want := reeval(t, srv, r.query, r.answer[0].Timestamp.Time(), "pod", "container")["web-0/app"]
		cpu := pm.Containers[0].Usage[corev1.ResourceCPU]
		mustf(t, cpu.MilliValue() == milli(want), "ns2/web-0 cpu %v, PromQL %v", cpu.String(), want)
	})
	t.Run("nodes", func(t *testing.T) {
		var list metricsv1beta1.NodeMetricsList
		mustf(t, s.get(t, base+"/nodes", &list) == http.StatusOK, "list failed")
		mustf(t, len(list.Items) == 1 && list.Items[0].Name == "n1", "nodes = %+v, want n1 only", list.Items)
		q := s.rec.all()
		cpu := list.Items[0].Usage[corev1.ResourceCPU]
		want := reeval(t, srv, q[len(q)-2].query, q[len(q)-2].answer[0].Timestamp.Time(), "node", "")["n1"]
		if strings.Contains(q[len(q)-2].query, "memory") {
			want = reeval(t, srv, q[len(q)-1].query, q[len(q)-1].answer[0].Timestamp.Time(), "node", "")["n1"]
		}
		mustf(t, cpu.MilliValue() == milli(want), "n1 cpu %dm, PromQL %v", cpu.MilliValue(), want)
		mustf(t, s.get(t, base+"/nodes/n2", nil) == http.StatusNotFound, "node without samples not 404")
	})
}

func podNames(l metricsv1beta1.PodMetricsList) string {
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return strings.Join(out, " ")
}

// checkAgainstPromQL re-evaluates the last cpu and memory queries at the time of their
// answers and compares every container's values and every pod's timestamp.
func checkAgainstPromQL(t *testing.T, s *resourceStack, srv *promtest.Server, list metricsv1beta1.PodMetricsList) {
	t.Helper()
	q := s.rec.all()
	mustf(t, len(q) >= 2, "fewer than two queries recorded")
	want := map[string]map[string]float64{}
	var oldest time.Time
	for _, r := range q[len(q)-2:] {
		mustf(t, len(r.answer) > 0, "empty answer to %s", r.query)
		at := r.answer[0].Timestamp.Time()
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
		kind := "cpu"
		if strings.Contains(r.query, "memory") {
			kind = "memory"
		}
		want[kind] = reeval(t, srv, r.query, at, "pod", "container")
	}
	for _, p := range list.Items {
		mustf(t, p.Timestamp.Time.Equal(oldest.Truncate(time.Second)), "%s timestamp %v, want the samples' %v", p.Name, p.Timestamp, oldest)
		mustf(t, p.Window.Duration == time.Minute, "%s window %v", p.Name, p.Window)
		var containers []string
		for _, c := range p.Containers {
			containers = append(containers, c.Name)
			cpu, mem := c.Usage[corev1.ResourceCPU], c.Usage[corev1.ResourceMemory]
			key := p.Namespace + "/" + p.Name + "/" + c.Name
			if len(want["cpu"]) > 0 && !hasNamespace(want["cpu"]) {
				key = p.Name + "/" + c.Name
			}
			mustf(t, cpu.MilliValue() == milli(want["cpu"][key]), "%s cpu %dm, PromQL %v", key, cpu.MilliValue(), want["cpu"][key])
			mustf(t, mem.Value() == int64(math.Round(want["memory"][key])), "%s memory %d, PromQL %v", key, mem.Value(), want["memory"][key])
		}
		mustf(t, slices.IsSorted(containers) && len(containers) > 0, "%s containers %v", p.Name, containers)
	}
}

func hasNamespace(m map[string]float64) bool {
	for k := range m {
		return strings.Count(k, "/") == 2
	}
	return false
}

// reeval runs query at at and indexes the samples by [namespace/]label[/label2].
func reeval(t *testing.T, srv *promtest.Server, query string, at time.Time, label, label2 string) map[string]float64 {
	t.Helper()
	v, _, err := srv.API().Query(context.Background(), query, at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, smp := range v.(model.Vector) {
		key := string(smp.Metric[model.LabelName(label)])
		if ns := smp.Metric["namespace"]; ns != "" {
			key = string(ns) + "/" + key
		}
		if label2 != "" {
			key += "/" + string(smp.Metric[model.LabelName(label2)])
		}
		out[key] = float64(smp.Value)
	}
	return out
}
