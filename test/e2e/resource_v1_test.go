package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// metricsRequests sums the adapter's own apiserver_request_total of
// metrics.k8s.io at version (v1, v1beta1) for resource (pods, nodes) and verb
// (LIST, GET).
func metricsRequests(t *testing.T, version, resource, verb string) float64 {
	t.Helper()
	body := adapterMetricsText(t)
	var sum float64
	want := []string{`group="metrics.k8s.io"`, `version="` + version + `"`, `resource="` + resource + `"`, `verb="` + verb + `"`}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok || !containsAll(labels, want) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("adapter /metrics: %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestResourceMetricsV1 (not parallel: the adapter's request counters are
// read while nothing else asks metrics.k8s.io): with v1.metrics.k8s.io and
// v1beta1.metrics.k8s.io registered, kubectl top reads v1, the two versions
// answer the same, kubectl explain describes v1 from the adapter's OpenAPI,
// and kube-controller-manager's HPA scales on cpu through v1beta1 (its
// resource metrics client is typed to v1beta1 in Kubernetes 1.37).
func TestResourceMetricsV1(t *testing.T) {
	if err := env().WaitAPIServicesAvailable(t.Context(), time.Minute, "v1.metrics.k8s.io", "v1beta1.metrics.k8s.io"); err != nil {
		t.Fatal(err)
	}
	t.Run("kubectl top reads v1", func(t *testing.T) {
		pods, nodes, beta := metricsRequests(t, "v1", "pods", "LIST"), metricsRequests(t, "v1", "nodes", "LIST"), metricsRequests(t, "v1beta1", "pods", "LIST")
		want := map[string]topRow{}
		for _, c := range resourceContainers() {
			if strings.HasPrefix(c.pod, "web-") { // app=web
				r := want[c.pod]
				r.cpuMilli += int64(c.cores * 1000)
				r.memMi += int64(c.memBytes / mi)
				want[c.pod] = r
			}
		}
		eventuallyTop(t, want, "pods", "-n", fixtureNamespace, "-l", "app=web", "--no-headers")
		if _, _, err := kubectlTop(t.Context(), "nodes", "--no-headers"); err != nil {
			t.Fatal(err)
		}
		gotPods, gotNodes, gotBeta := metricsRequests(t, "v1", "pods", "LIST"), metricsRequests(t, "v1", "nodes", "LIST"), metricsRequests(t, "v1beta1", "pods", "LIST")
		if gotPods <= pods || gotNodes <= nodes {
			t.Errorf("adapter's v1 LISTs: pods %v -> %v, nodes %v -> %v; kubectl top did not read v1", pods, gotPods, nodes, gotNodes)
		}
		t.Logf("kubectl top: v1 pods LIST %v -> %v, nodes LIST %v -> %v; v1beta1 pods LIST %v -> %v", pods, gotPods, nodes, gotNodes, beta, gotBeta)
	})
	t.Run("versions answer the same", func(t *testing.T) {
		for _, tc := range []struct{ path, labelSelector string }{
			{"/namespaces/" + fixtureNamespace + "/pods/web-2", ""},
			{"/namespaces/" + fixtureNamespace + "/pods", "app=web"},
			{"/nodes", ""},
		} {
			sameAnswers(t, tc.path, tc.labelSelector)
		}
	})
	t.Run("kubectl explain v1", func(t *testing.T) {
		r := kubectl(t, t.TempDir(), false, "explain", "podmetrics.containers", "--api-version=metrics.k8s.io/v1")
		if r.code != 0 || !strings.Contains(r.stdout, "VERSION:    v1\n") || !strings.Contains(r.stdout, "usage") {
			t.Errorf("kubectl explain podmetrics.containers --api-version=metrics.k8s.io/v1: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("kube-controller-manager's cpu HPA", testCPUHPAReadsV1beta1)
}

// sameAnswers reads path (with labelSelector, if any) at v1 and v1beta1
// through kube-apiserver and wants the same body but for apiVersion. A scrape
// between the two reads can move a timestamp: up to five tries.
func sameAnswers(t *testing.T, path, labelSelector string) {
	t.Helper()
	raw := func(v string) string {
		req := env().Client().Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/" + v + path)
		if labelSelector != "" {
			req = req.Param("labelSelector", labelSelector)
		}
		out, err := req.DoRaw(t.Context())
		if err != nil {
			t.Fatalf("GET %s at %s: %v", path, v, err)
		}
		return string(out)
	}
	var v1, beta string
	for range 5 {
		v1, beta = raw("v1"), raw("v1beta1")
		if !strings.Contains(v1, `"apiVersion":"metrics.k8s.io/v1"`) {
			t.Fatalf("GET %s at v1: %s", path, v1)
		}
		if strings.ReplaceAll(beta, `"apiVersion":"metrics.k8s.io/v1beta1"`, `"apiVersion":"metrics.k8s.io/v1"`) == v1 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Errorf("GET %s:\nv1      %s\nv1beta1 %s", path, v1, beta)
}

// testCPUHPAReadsV1beta1 runs an HPA on cpu Utilization (200% of the 100m
// request per pod: to its maximum, 3) with kube-controller-manager and wants
// it to scale while the adapter counts v1beta1 pod lists and no v1 ones.
func testCPUHPAReadsV1beta1(t *testing.T) {
	ns := newNamespace(t, "e2e-hpa-cpu-v1-")
	createDeployment(t, ns, "cpu")
	publishPodCPU(t, ns, "cpu", 0.2)
	v1, beta := metricsRequests(t, "v1", "pods", "LIST"), metricsRequests(t, "v1beta1", "pods", "LIST")
	createHPA(t, ns, "cpu", 3, autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name:   "cpu",
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
	}})
	waitReplicas(t, ns, "cpu", 3*time.Minute, "3 (max)", func(r int32) bool { return r == 3 })
	gotV1, gotBeta := metricsRequests(t, "v1", "pods", "LIST"), metricsRequests(t, "v1beta1", "pods", "LIST")
	if gotBeta <= beta {
		t.Errorf("adapter's v1beta1 pods LISTs %v -> %v while the HPA scaled", beta, gotBeta)
	}
	if gotV1 != v1 {
		t.Errorf("adapter's v1 pods LISTs %v -> %v while only the HPA asked", v1, gotV1)
	}
	t.Logf("cpu HPA 1 -> 3: v1beta1 pods LIST %v -> %v, v1 %v -> %v", beta, gotBeta, v1, gotV1)
}

// publishPodCPU publishes cores of cpu and 32 MiB of memory for each live pod
// of app=<app> in ns (container <app>), every second until the test ends,
// and removes the series then.
func publishPodCPU(t *testing.T, ns, app string, cores float64) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	published := map[string]map[string]string{}
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			pods, err := env().Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err == nil {
				for _, p := range pods.Items {
					labels := map[string]string{"namespace": ns, "pod": p.Name, "container": app}
					exp().SetGauge(cpuCoresGauge, labels, cores)
					exp().SetGauge(containerMemGauge, labels, 32*mi)
					published[p.Name] = labels
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		for _, labels := range published {
			exp().Delete(cpuCoresGauge, labels)
			exp().Delete(containerMemGauge, labels)
		}
	})
}
