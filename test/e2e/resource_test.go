package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
)

// resourceRulesYAML serves metrics.k8s.io from series shaped like the kubelet's
// /metrics/resource endpoint (what metrics-server reads), published by the exporter.
// The cpu query also reads e2e_container_cpu_cores, a gauge of cores: the
// differential scenarios need cpu values that change at once, where a rate over a
// counter ramps and two controllers sampling at different instants would see
// different intermediate values.
const resourceRulesYAML = `
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!=""}[1m])) or sum by (<<.GroupBy>>) (e2e_container_cpu_cores{<<.LabelMatchers>>,container!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[1m]))'
    resources: {template: "<<.Resource>>"}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources: {template: "<<.Resource>>"}
    containerLabel: container
  window: 1m
`

// cAdvisor-shaped series names (kubelet /metrics/resource).
const (
	containerCPUCounter = "container_cpu_usage_seconds_total"
	containerMemGauge   = "container_memory_working_set_bytes"
	nodeCPUCounter      = "node_cpu_usage_seconds_total"
	nodeMemGauge        = "node_memory_working_set_bytes"
	cpuCoresGauge       = "e2e_container_cpu_cores"
)

const mi = 1 << 20

// resourceContainer is one container of a fixture pod with its constant usage.
type resourceContainer struct {
	pod, container string
	cores          float64 // cpu counter increase per second
	memBytes       float64
}

func (c resourceContainer) labels() map[string]string {
	return map[string]string{"namespace": fixtureNamespace, "pod": c.pod, "container": c.container}
}

// resourceContainers are the containers of the fixture pods (web-2 has a sidecar,
// so kubectl top sums two containers). Values are exact in binary.
func resourceContainers() []resourceContainer {
	return []resourceContainer{
		{"web-0", "app", 0.25, 64 * mi},
		{"web-1", "app", 0.5, 96 * mi},
		{"web-2", "app", 0.125, 128 * mi},
		{"web-2", "sidecar", 0.0625, 16 * mi},
		{"worker-0", "app", 1, 256 * mi},
	}
}

// resourceNode is a node's constant usage; nodes without one publish nothing.
type resourceNode struct {
	node     string
	cores    float64
	memBytes float64
}

func resourceNodes() []resourceNode {
	return []resourceNode{{cluster.NodeName(0), 1.5, 2048 * mi}, {cluster.NodeName(1), 0.75, 1024 * mi}}
}

// publishResourceFixture sets the memory gauges and creates the cpu counters.
func publishResourceFixture(e *exporter.Exporter) {
	for _, c := range resourceContainers() {
		e.SetGauge(containerMemGauge, c.labels(), c.memBytes)
		e.AddCounter(containerCPUCounter, c.labels(), 0)
	}
	for _, n := range resourceNodes() {
		e.SetGauge(nodeMemGauge, map[string]string{"node": n.node}, n.memBytes)
		e.AddCounter(nodeCPUCounter, map[string]string{"node": n.node}, 0)
	}
}

// resourceCounterLoop advances the cpu counters at their rates until stop, by the
// time actually elapsed (a busy machine delays and drops ticks).
func resourceCounterLoop(stop <-chan struct{}, e *exporter.Exporter, tick time.Duration) {
	last := time.Now()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// The clock read here, not the tick's own time: a tick delivered
			// late carries a time that can precede last, and a counter only
			// grows (the exporter panics on a negative delta).
			now := time.Now()
			dt := max(now.Sub(last).Seconds(), 0)
			last = now
			for _, c := range resourceContainers() {
				e.AddCounter(containerCPUCounter, c.labels(), c.cores*dt)
			}
			for _, n := range resourceNodes() {
				e.AddCounter(nodeCPUCounter, map[string]string{"node": n.node}, n.cores*dt)
			}
		}
	}
}

// topRow is one line of kubectl top: cpu in millicores, memory in Mi, or unknown.
type topRow struct {
	cpuMilli, memMi int64
	unknown         bool
}

// kubectlTop runs the real kubectl top with args and parses NAME CPU ... MEMORY.
func kubectlTop(ctx context.Context, args ...string) (map[string]topRow, string, error) {
	c := env()
	cmd := exec.CommandContext(ctx, c.Kubectl(), append([]string{"--kubeconfig", c.AdminKubeconfig(), "top"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, stdout.String() + stderr.String(), fmt.Errorf("kubectl top %v: %w", args, err)
	}
	rows := map[string]topRow{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "NAME" {
			continue
		}
		if f[1] == "<unknown>" {
			rows[f[0]] = topRow{unknown: true}
			continue
		}
		memCol := 2
		if len(f) >= 5 { // nodes: NAME CPU(cores) CPU% MEMORY(bytes) MEMORY%
			memCol = 3
		}
		cpu, err1 := strconv.ParseInt(strings.TrimSuffix(f[1], "m"), 10, 64)
		mem, err2 := strconv.ParseInt(strings.TrimSuffix(f[memCol], "Mi"), 10, 64)
		if err1 != nil || err2 != nil || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[memCol], "Mi") {
			return nil, stdout.String(), fmt.Errorf("unexpected line %q", line)
		}
		rows[f[0]] = topRow{cpuMilli: cpu, memMi: mem}
	}
	return rows, stdout.String(), nil
}

// checkTop compares rows with want; cpu comes from rate() over counters advanced in
// 100 ms steps, so it may be off by a few millicores.
func checkTop(rows, want map[string]topRow) error {
	if len(rows) != len(want) {
		return fmt.Errorf("%d rows, want %d", len(rows), len(want))
	}
	for name, w := range want {
		g, ok := rows[name]
		switch {
		case !ok:
			return fmt.Errorf("%s missing", name)
		case g.unknown != w.unknown || g.memMi != w.memMi:
			return fmt.Errorf("%s = %+v, want %+v", name, g, w)
		case g.cpuMilli < w.cpuMilli-3 || g.cpuMilli > w.cpuMilli+3:
			return fmt.Errorf("%s cpu %dm, want %dm ±3m", name, g.cpuMilli, w.cpuMilli)
		}
	}
	return nil
}

// eventuallyTop polls kubectl top until it prints want (Prometheus needs two scrapes
// before rate() has a value) or a minute has passed.
func eventuallyTop(t *testing.T, want map[string]topRow, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var last error
	var out string
	for ctx.Err() == nil {
		callCtx, callCancel := context.WithTimeout(ctx, 20*time.Second)
		rows, o, err := kubectlTop(callCtx, args...)
		callCancel()
		if ctx.Err() != nil && last != nil {
			break // keep the last real answer, not the kill at the deadline
		}
		out, last = o, err
		if err == nil {
			if last = checkTop(rows, want); last == nil {
				return
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("kubectl top %s: %v\n%s", strings.Join(args, " "), last, out)
}

func TestKubectlTopPods(t *testing.T) {
	want := map[string]topRow{}
	for _, c := range resourceContainers() {
		r := want[c.pod]
		r.cpuMilli += int64(c.cores * 1000)
		r.memMi += int64(c.memBytes / mi)
		want[c.pod] = r
	}
	eventuallyTop(t, want, "pods", "-n", fixtureNamespace, "--no-headers")
	// A label selector narrows the list (metrics-server's storage, our cache).
	delete(want, "worker-0")
	eventuallyTop(t, want, "pods", "-n", fixtureNamespace, "-l", "app=web", "--no-headers")
}

func TestKubectlTopNodes(t *testing.T) {
	want := map[string]topRow{}
	for _, name := range env().NodeNames() {
		want[name] = topRow{unknown: true} // no samples: left out, kubectl prints <unknown>
	}
	for _, n := range resourceNodes() {
		want[n.node] = topRow{cpuMilli: int64(n.cores * 1000), memMi: int64(n.memBytes / mi)}
	}
	eventuallyTop(t, want, "nodes", "--no-headers")
}

func TestResourceMetricsAPI(t *testing.T) {
	client, err := metricsclient.NewForConfig(env().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eventuallyTop(t, map[string]topRow{"web-0": {cpuMilli: 250, memMi: 64}}, "pods", "-n", fixtureNamespace, "web-0", "--no-headers")

	pm, err := client.MetricsV1beta1().PodMetricses(fixtureNamespace).Get(ctx, "web-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range pm.Containers {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"app", "sidecar"}) || pm.Window.Duration != time.Minute {
		t.Errorf("web-2: containers %v window %v, want [app sidecar] and 1m", names, pm.Window)
	}
	if age := time.Since(pm.Timestamp.Time); age < 0 || age > time.Minute {
		t.Errorf("web-2 timestamp %v is not a recent sample's", pm.Timestamp)
	}

	_, err = client.MetricsV1beta1().PodMetricses(fixtureNamespace).Get(ctx, "no-such-pod", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("unknown pod: err = %v, want NotFound", err)
	}
	nodes, err := client.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, n := range nodes.Items {
		served = append(served, n.Name)
	}
	slices.Sort(served)
	if !slices.Equal(served, []string{cluster.NodeName(0), cluster.NodeName(1)}) {
		t.Errorf("node metrics for %v, want only the nodes with samples", served)
	}
	_, err = client.MetricsV1beta1().NodeMetricses().Get(ctx, cluster.NodeName(2), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("node without samples: err = %v, want NotFound", err)
	}
}
