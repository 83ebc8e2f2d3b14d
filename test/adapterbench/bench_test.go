//go:build adapterbench

package adapterbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// The namespace of the pods, the metric both adapters serve (the rule file
// rulestest.PodsAndQueue) and the identity that asks, an HPA-like user
// with read access to the custom metrics API only.
const (
	benchNS     = "bench"
	benchMetric = "http_requests_per_second"
	benchSeries = "http_requests_total"
	readerUser  = "adapter-bench-reader"
	readyWait   = 3 * time.Minute
)

// settings of one run, from the environment.
type settings struct {
	pods, n, clients int
	window           time.Duration
	out              string
}

func loadSettings(t *testing.T) settings {
	s := settings{pods: 1000, n: 200, clients: 8, window: 15 * time.Second, out: os.Getenv("EBBFLOW_ADAPTER_BENCH_OUT")}
	for key, dst := range map[string]*int{"EBBFLOW_ADAPTER_BENCH_PODS": &s.pods, "EBBFLOW_ADAPTER_BENCH_N": &s.n, "EBBFLOW_ADAPTER_BENCH_CLIENTS": &s.clients} {
		if v := os.Getenv(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive integer", key, v)
			}
			*dst = n
		}
	}
	if v := os.Getenv("EBBFLOW_ADAPTER_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("EBBFLOW_ADAPTER_BENCH_WINDOW=%q: want a positive duration", v)
		}
		s.window = d
	}
	return s
}

// podName is pod i's name, shaped like a Deployment's (20 characters).
func podName(i int) string { return fmt.Sprintf("web-7c9d8f6b5d-%05x", i*7919%(1<<20)) }

func TestAdapterBench(t *testing.T) {
	s := loadSettings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	report := Report{Date: time.Now(), Pods: s.pods, Uptime: uptime()}
	promAdapter, err := buildtools.Path(ctx, os.Stderr, "prometheus-adapter")
	if err != nil {
		t.Fatalf("prometheus-adapter: %v", err)
	}
	e := exporter.New()
	e.Start(t)
	names := make([]string, s.pods)
	for i := range names {
		names[i] = podName(i)
		e.AddCounter(benchSeries, map[string]string{"namespace": benchNS, "pod": names[i]}, float64(i))
	}
	go countRequests(ctx, e, names)
	rulesYAML := rulestest.Data(t, rulestest.PodsAndQueue)
	opts := cluster.Options{
		Nodes: (s.pods + 109) / 110, RulesYAML: rulesYAML,
		PrometheusTargets: []promtest.Target{{Addr: e.Addr(), Job: "bench", HonorLabels: true}},
	}
	if testing.Verbose() {
		opts.Log = os.Stdout
	}
	c := cluster.StartT(t, opts)
	if err := createPods(ctx, c, names); err != nil {
		t.Fatal(err)
	}
	cl, err := newClients(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	report.Results = append(report.Results, measureAdapter(ctx, t, cl, s, cluster.Adapter, c))
	report.Direct = directPromQL(ctx, t, c.Prometheus().URL(), rulesYAML, names, s.n)
	if err := c.StartPrometheusAdapter(ctx, promAdapter); err != nil {
		t.Fatalf("start prometheus-adapter: %v\n%s", err, c.LogTail(cluster.PrometheusAdapter, 30))
	}
	report.Results = append(report.Results, measureAdapter(ctx, t, cl, s, cluster.PrometheusAdapter, c))
	report.Uptime += " → " + uptime()

	var b strings.Builder
	report.Write(&b)
	t.Log("\n" + b.String())
	if s.out != "" {
		if err := os.MkdirAll(filepath.Dir(s.out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// countRequests keeps every pod's counter rising, one request a second.
func countRequests(ctx context.Context, e *exporter.Exporter, names []string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, n := range names {
				e.AddCounter(benchSeries, map[string]string{"namespace": benchNS, "pod": n}, 1)
			}
		}
	}
}

// createPods creates the pods, spread over the kwok Nodes, with 8 writers.
func createPods(ctx context.Context, c *cluster.Cluster, names []string) error {
	cs := c.Client()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	saCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cluster.WaitDefaultServiceAccount(saCtx, cs, benchNS); err != nil {
		return err
	}
	nodes := c.NodeNames()
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: benchNS, Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{NodeName: nodes[i%len(nodes)],
						Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/web"}}},
				}
				if _, err := cs.CoreV1().Pods(benchNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("pod %s: %w", names[i], err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range names {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs
}

// newClients grants the reader identity what an HPA controller has (read the
// custom metrics API) plus the adapter's /metrics, and builds its clients.
func newClients(ctx context.Context, c *cluster.Cluster) (*clients, error) {
	rbac := c.Client().RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: readerUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"custom.metrics.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}},
			{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
		},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("cluster role: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: readerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: readerUser},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: readerUser}},
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("cluster role binding: %w", err)
	}
	kc, err := c.KubeconfigFor(readerUser)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, err
	}
	return newClientsFor(cfg, c.AdapterURL(), c.AdapterCA(), c.Prometheus().URL())
}

// directPromQL sends the PromQL of a `*` request straight to Prometheus, in
// ebbflow-adapter's shape (one namespace-wide query) and prometheus-adapter's
// (a regex of every pod's name), rendered by the rule of the rule file.
func directPromQL(ctx context.Context, t *testing.T, promURL string, rulesYAML []byte, names []string, n int) []Direct {
	set, err := rules.Parse(rulesYAML, rulefile.DefaultRESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	req := rules.CustomRequest{Series: benchSeries, Namespace: benchNS, Resource: schema.GroupResource{Resource: "pods"}}
	wide, err := set.Rules[0].CustomQuery(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Names = names
	regex, err := set.Rules[0].CustomQuery(req)
	if err != nil {
		t.Fatal(err)
	}
	var out []Direct
	for _, d := range []Direct{{Shape: "namespace-wide (ebbflow-adapter)", PromQL: wide}, {Shape: "regex of names (prometheus-adapter)", PromQL: regex}} {
		ds, err := timePromQL(ctx, promURL, d.PromQL, len(names), n)
		if err != nil {
			t.Fatalf("%s: %v", d.Shape, err)
		}
		d.Latency = Summarize(ds)
		out = append(out, d)
	}
	return out
}

// measureAdapter waits until the adapter behind the APIServices answers for
// every pod, then measures it.
func measureAdapter(ctx context.Context, t *testing.T, cl *clients, s settings, component string, c *cluster.Cluster) Result {
	t.Logf("%s: waiting for %d pods' values; load %s", component, s.pods, uptime())
	if err := cl.waitServing(ctx, s.pods, readyWait); err != nil {
		t.Fatalf("%s: %v\n%s", component, err, c.LogTail(component, 30))
	}
	res := Result{Adapter: component, Clients: s.clients, Window: s.window}
	for _, p := range cl.paths(podName(0)) {
		path, err := cl.measurePath(ctx, p, s.n)
		if err != nil {
			t.Fatalf("%s: %s: %v", component, p.name, err)
		}
		res.Paths = append(res.Paths, path)
		t.Logf("%s: %s p50 %s ms", component, p.name, ms(path.Latency.P50))
	}
	res.Throughput, res.Errors = cl.throughput(ctx, s.clients, s.window)
	t.Logf("%s: %.1f requests/s with %d clients (%d errors)", component, res.Throughput, s.clients, res.Errors)
	pid, err := c.Pid(component)
	if err != nil {
		t.Fatal(err)
	}
	if res.PeakRSS, err = PeakRSS(pid); err != nil {
		t.Fatal(err)
	}
	return res
}

// uptime is the output of uptime(1), the machine's load.
func uptime() string {
	out, err := exec.Command("uptime").Output()
	if err != nil {
		return "uptime: " + err.Error()
	}
	return strings.TrimSpace(string(out))
}
