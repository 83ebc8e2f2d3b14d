package provider

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/metrics"

	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// resourceRulesYAML is the kube-prometheus shape of resourceRules; CPU_NODE_QUERY is
// replaced to vary the node query.
const resourceRulesYAML = `
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[4m]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (irate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[4m]))'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  memory:
    containerQuery: CONTAINER_MEMORY_QUERY
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  window: 4m
`

const (
	memGrouped = `'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""})'`
	// memJoined cannot be asked across namespaces (on(...) mixes objects).
	memJoined = `'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>} * on(pod) group_left() kube_pod_info)'`
)

func compileResourceRules(t *testing.T, memQuery string) *rules.ResourceRules {
	t.Helper()
	set, err := rules.Parse([]byte(strings.Replace(resourceRulesYAML, "CONTAINER_MEMORY_QUERY", memQuery, 1)), rulefile.DefaultRESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	if set.Resource == nil {
		t.Fatal("resourceRules not compiled")
	}
	return set.Resource
}

type resourceFixture struct {
	reg  *prometheus.Registry
	prom *promfake.Client
	p    *ResourceProvider
}

func newResourceFixture(t *testing.T, memQuery string, threshold int) *resourceFixture {
	t.Helper()
	f := &resourceFixture{reg: prometheus.NewRegistry(), prom: &promfake.Client{Answers: map[string]model.Vector{}}}
	var err error
	f.p, err = NewResource(ResourceOptions{Prom: f.prom, NamespaceQueryThreshold: threshold, Registerer: f.reg}, compileResourceRules(t, memQuery))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// rsample is a resource sample at t0+offset seconds.
func rsample(v float64, offset int, kv ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[model.LabelName(kv[i])] = model.LabelValue(kv[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v), Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(offset) * time.Second).UnixNano())}
}

func podMeta(ns, name string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}}
}

func usage(t *testing.T, l corev1.ResourceList) (cpuMilli, memBytes int64) {
	t.Helper()
	c, m := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
	return c.MilliValue(), m.Value()
}

func TestPodMetricsOneNamespace(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 0)
	cpuQ := `sum by (pod,container) (irate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1|web-2|web-3",container!=""}[4m]))`
	memQ := `sum by (pod,container) (container_memory_working_set_bytes{namespace="shop",pod=~"web-1|web-2|web-3",container!=""})`
	f.prom.Answers[cpuQ] = model.Vector{
		rsample(0.25, -10, "pod", "web-1", "container", "app"),
		rsample(math.NaN(), 0, "pod", "web-1", "container", "sidecar"),
		rsample(-3, 0, "pod", "web-1", "container", "init"),         // counter reset: 0
		rsample(0.5, 0, "pod", "web-1", "container", ""),            // pod cgroup: skipped
		rsample(math.Inf(1), 0, "pod", "web-2", "container", "app"), // dropped
		rsample(1.5, 0, "pod", "web-3", "container", "app"),         // no memory: web-3 left out
		rsample(0.125, 0, "pod", "web-9", "container", "app"),       // not asked
	}
	f.prom.Answers[memQ] = model.Vector{
		rsample(100<<20, -30, "pod", "web-1", "container", "app"),
		rsample(1024.4, 0, "pod", "web-1", "container", "metrics"), // memory only: cpu 0
		rsample(5<<20, 0, "pod", "web-2", "container", "app"),
	}
	got, err := f.p.PodMetrics(context.Background(), []*metav1.PartialObjectMetadata{podMeta("shop", "web-1"), podMeta("shop", "web-2"), podMeta("shop", "web-3")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d pods, want only web-1 (web-2 has no usable cpu, web-3 no memory): %+v", len(got), got)
	}
	pm := got[0]
	if pm.Name != "web-1" || pm.Namespace != "shop" || pm.Labels["app"] != "web-1" {
		t.Errorf("object meta = %+v", pm.ObjectMeta)
	}
	if !pm.Timestamp.Time.Equal(t0.Add(-30*time.Second)) || pm.Window.Duration != 4*time.Minute {
		t.Errorf("timestamp %v window %v, want the oldest sample %v and 4m", pm.Timestamp, pm.Window, t0.Add(-30*time.Second))
	}
	want := []struct {
		name     string
		cpuMilli int64
		memBytes int64
	}{{"app", 250, 100 << 20}, {"init", 0, 0}, {"metrics", 0, 1024}, {"sidecar", 0, 0}}
	if len(pm.Containers) != len(want) {
		t.Fatalf("containers = %+v, want %d", pm.Containers, len(want))
	}
	for i, w := range want {
		c := pm.Containers[i]
		cpu, mem := usage(t, c.Usage)
		if c.Name != w.name || cpu != w.cpuMilli || mem != w.memBytes {
			t.Errorf("container %d = %s cpu %dm mem %d, want %s %dm %d", i, c.Name, cpu, mem, w.name, w.cpuMilli, w.memBytes)
		}
	}
	if got := len(f.prom.Queries()); got != 2 {
		t.Errorf("sent %d queries, want 2 (cpu, memory)", got)
	}
}

func TestPodMetricsAcrossNamespaces(t *testing.T) {
	pods := []*metav1.PartialObjectMetadata{podMeta("a", "web"), podMeta("b", "web"), podMeta("b", "db")}
	t.Run("one query grouped by namespace", func(t *testing.T) {
		f := newResourceFixture(t, memGrouped, 0)
		f.prom.Answers[`sum by (pod,container,namespace) (irate(container_cpu_usage_seconds_total{pod=~"web|db",container!=""}[4m]))`] = model.Vector{
			rsample(0.1, 0, "namespace", "a", "pod", "web", "container", "c"),
			rsample(0.2, 0, "namespace", "b", "pod", "web", "container", "c"),
			rsample(0.3, 0, "namespace", "b", "pod", "db", "container", "c"),
			rsample(0.4, 0, "namespace", "c", "pod", "web", "container", "c"),
		}
		f.prom.Answers[`sum by (pod,container,namespace) (container_memory_working_set_bytes{pod=~"web|db",container!=""})`] = model.Vector{
			rsample(1, 0, "namespace", "a", "pod", "web", "container", "c"),
			rsample(2, 0, "namespace", "b", "pod", "web", "container", "c"),
			rsample(3, 0, "namespace", "b", "pod", "db", "container", "c"),
		}
		got, err := f.p.PodMetrics(context.Background(), pods)
		if err != nil {
			t.Fatal(err)
		}
		checkPods(t, got, "a/web=100m,1", "b/web=200m,2", "b/db=300m,3")
	})
	t.Run("per namespace when the query mixes objects", func(t *testing.T) {
		f := newResourceFixture(t, memJoined, 0)
		f.prom.QueryFunc = func(q string) (model.Vector, error) {
			ns := "a"
			if strings.Contains(q, `namespace="b"`) {
				ns = "b"
			}
			if strings.Contains(q, "namespace,") || strings.Contains(q, ",namespace)") {
				t.Errorf("query across namespaces for a query that mixes objects: %s", q)
			}
			return model.Vector{rsample(7, 0, "pod", "web", "container", "c"), rsample(8, 0, "pod", "db", "container", "c"), rsample(9, 0, "namespace", ns)}, nil
		}
		f.prom.Answers[`sum by (pod,container,namespace) (irate(container_cpu_usage_seconds_total{pod=~"web|db",container!=""}[4m]))`] = model.Vector{
			rsample(0.1, 0, "namespace", "a", "pod", "web", "container", "c"),
			rsample(0.2, 0, "namespace", "b", "pod", "web", "container", "c"),
			rsample(0.3, 0, "namespace", "b", "pod", "db", "container", "c"),
		}
		got, err := f.p.PodMetrics(context.Background(), pods)
		if err != nil {
			t.Fatal(err)
		}
		checkPods(t, got, "a/web=100m,7", "b/web=200m,7", "b/db=300m,8")
		var memQueries []string
		for _, q := range f.prom.Queries() {
			if strings.Contains(q, "memory") {
				memQueries = append(memQueries, q)
			}
		}
		if len(memQueries) != 2 || !strings.Contains(strings.Join(memQueries, "\n"), `{namespace="b",pod=~"web|db"}`) {
			t.Errorf("memory queries = %q, want one per namespace", memQueries)
		}
	})
}

// checkPods compares pods with "ns/name=CPUm,MEM" strings (single container).
func checkPods(t *testing.T, got []metrics.PodMetrics, want ...string) {
	t.Helper()
	var have []string
	for _, p := range got {
		s := p.Namespace + "/" + p.Name + "="
		for _, c := range p.Containers {
			cpu, mem := usage(t, c.Usage)
			s += resource.NewMilliQuantity(cpu, resource.DecimalSI).String() + "," + resource.NewQuantity(mem, resource.BinarySI).String()
		}
		have = append(have, s)
	}
	if strings.Join(have, " ") != strings.Join(want, " ") {
		t.Errorf("pods = %v, want %v", have, want)
	}
}

func TestPodMetricsNamespaceWideAboveThreshold(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 2)
	f.prom.QueryFunc = func(q string) (model.Vector, error) {
		if !strings.Contains(q, `{namespace="shop",pod!="",`) {
			t.Errorf("query %q names pods above the threshold", q)
		}
		return model.Vector{rsample(1, 0, "pod", "p1", "container", "c"), rsample(1, 0, "pod", "p2", "container", "c"), rsample(1, 0, "pod", "p3", "container", "c"), rsample(1, 0, "pod", "other", "container", "c")}, nil
	}
	got, err := f.p.PodMetrics(context.Background(), []*metav1.PartialObjectMetadata{podMeta("shop", "p1"), podMeta("shop", "p2"), podMeta("shop", "p3")})
	if err != nil {
		t.Fatal(err)
	}
	checkPods(t, got, "shop/p1=1,1", "shop/p2=1,1", "shop/p3=1,1")
}

func TestNodeMetrics(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 0)
	f.prom.Answers[`sum by (node) (irate(node_cpu_usage_seconds_total{node=~"n1|n2|n3"}[4m]))`] = model.Vector{
		rsample(1.5, 0, "node", "n1"), rsample(0.5, -5, "node", "n2"), rsample(2, 0, "node", "n3"),
	}
	f.prom.Answers[`sum by (node) (node_memory_working_set_bytes{node=~"n1|n2|n3"})`] = model.Vector{
		rsample(2<<30, -20, "node", "n1"), rsample(1<<30, 0, "node", "n2"),
	}
	nodes := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "n2"}}, {ObjectMeta: metav1.ObjectMeta{Name: "n3"}}}
	got, err := f.p.NodeMetrics(context.Background(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "n1" || got[1].Name != "n2" {
		t.Fatalf("nodes = %+v, want n1 and n2 (n3 has no memory sample)", got)
	}
	cpu, mem := usage(t, got[0].Usage)
	if cpu != 1500 || mem != 2<<30 || !got[0].Timestamp.Time.Equal(t0.Add(-20*time.Second)) || got[0].Window.Duration != 4*time.Minute {
		t.Errorf("n1 = %dm %d at %v window %v", cpu, mem, got[0].Timestamp, got[0].Window)
	}
	if !got[1].Timestamp.Time.Equal(t0.Add(-5 * time.Second)) {
		t.Errorf("n2 timestamp = %v, want the oldest sample", got[1].Timestamp)
	}
}

func TestResourceErrorsAreGeneric(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 0)
	f.prom.Err = errors.New(`dial tcp 10.0.0.1:9090: secret-token in "url"`)
	_, err := f.p.PodMetrics(context.Background(), []*metav1.PartialObjectMetadata{podMeta("shop", "web")})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("err = %v, want an internal error", err)
	}
	if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "container_") {
		t.Errorf("error leaks detail: %v", err)
	}
	if _, err := f.p.NodeMetrics(context.Background(), []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n"}}}); !apierrors.IsInternalError(err) {
		t.Errorf("node err = %v, want an internal error", err)
	}
	n := testutil.CollectAndCount(f.reg, "ebbflow_adapter_api_request_duration_seconds")
	if n != 1 {
		t.Errorf("%d series of request_duration_seconds, want 1 (metrics.k8s.io, error_500)", n)
	}
	if !strings.Contains(gatherText(t, f.reg), `group="metrics.k8s.io",outcome="error_500"`) {
		t.Errorf("self-metrics do not record the failure:\n%s", gatherText(t, f.reg))
	}
}

func gatherText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				sb.WriteString(l.GetName() + `="` + l.GetValue() + `",`)
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func TestResourceSetRules(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 0)
	pods := []*metav1.PartialObjectMetadata{podMeta("shop", "web")}
	f.p.SetRules(nil)
	got, err := f.p.PodMetrics(context.Background(), pods)
	if err != nil || len(got) != 0 || len(f.prom.Queries()) != 0 {
		t.Fatalf("without rules: %v %v, %d queries; want nothing", got, err, len(f.prom.Queries()))
	}
	f.p.SetRules(compileResourceRules(t, memJoined))
	f.prom.QueryFunc = func(string) (model.Vector, error) { return nil, nil }
	if _, err := f.p.PodMetrics(context.Background(), pods); err != nil {
		t.Fatal(err)
	}
	if q := f.prom.Queries(); len(q) != 2 || !strings.Contains(strings.Join(q, "\n"), "kube_pod_info") {
		t.Errorf("queries after SetRules = %q, want the new rules'", q)
	}
}

func TestResourceProviderSharesSelfMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newAPIMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewResource(ResourceOptions{Prom: &promfake.Client{}, Registerer: reg}, nil); err != nil {
		t.Fatalf("second registration of the request histogram: %v", err)
	}
}

func TestGetterAppliesTimeout(t *testing.T) {
	f := newResourceFixture(t, memGrouped, 0)
	f.prom.Gate = make(chan struct{}) // never answers
	g := f.p.Getter(context.Background(), 50*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := g.GetPodMetrics(podMeta("shop", "web"))
		done <- err
	}()
	select {
	case err := <-done:
		if !apierrors.IsInternalError(err) {
			t.Errorf("err = %v, want an internal error after the timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("GetPodMetrics did not return after its timeout")
	}
}

func TestResourceMilliValue(t *testing.T) {
	for _, tc := range []struct {
		name corev1.ResourceName
		v    float64
		want int64
		ok   bool
	}{
		{corev1.ResourceCPU, 0.2504, 250, true},
		{corev1.ResourceCPU, -0.1, 0, true},
		{corev1.ResourceCPU, math.NaN(), 0, true},
		{corev1.ResourceCPU, math.Inf(1), 0, false},
		{corev1.ResourceMemory, 1048576.4, 1048576000, true},
	} {
		got, ok := ResourceMilliValue(tc.name, model.SampleValue(tc.v))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %v: %d %v, want %d %v", tc.name, tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
