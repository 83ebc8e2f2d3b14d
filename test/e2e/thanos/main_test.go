// Package thanos tests ebbflow-adapter against a highly available Prometheus:
// two real Prometheus replicas (external label replica=prometheus-0/1, both
// scraping the same exporter) with Thanos sidecars behind Thanos Query, which
// deduplicates on `replica` and enforces a tenant taken from the
// X-Scope-OrgID header, as a Mimir or Cortex front end does. The adapter's
// --prometheus-url is Thanos Query's, on a local cluster of its own
// (test/cluster with Options.HAPrometheus).
//
// Run with `make test-e2e`; thanos is built by `hack/build-tools.sh thanos`.
package thanos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// The fixture: pods web-0..2 in namespace ha, each with an in-flight gauge and
// a request counter growing at requestRate per second, and one queue gauge.
const (
	namespace    = "ha"
	tenant       = "team-a"
	tenantHeader = "X-Scope-OrgID"
	inflight     = "ha_inflight"
	seriesCount  = "ha_inflight_series" // count of the in-flight series per pod
	requests     = "ha_requests_total"
	requestRate  = "ha_requests_per_second"
	queue        = "ha_queue_messages"
	queueName    = "orders"
	queueValue   = 42.0
	// requestsPerSecond is each pod's counter growth.
	requestsPerSecond = 10.0
)

// podInflight are the pods and their in-flight values (exact in float64 and
// in resource.Quantity).
var podInflight = map[string]float64{"web-0": 3, "web-1": 5.5, "web-2": 7}

// rulesYAML serves the fixture. seriesCount counts series per pod: 1 when
// Thanos deduplicates the replicas, 2 when it does not.
const rulesYAML = `
rules:
- seriesQuery: 'ha_inflight{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'ha_inflight{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^ha_inflight$", as: "ha_inflight_series"}
  metricsQuery: 'count(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'ha_requests_total{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'ha_queue_messages{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

var shared struct {
	cluster  *cluster.Cluster
	exporter *exporter.Exporter
}

func env() *cluster.Cluster { return shared.cluster }

// baseAdapterArgs are the adapter flags every test starts from: the tenant
// header Thanos Query requires.
func baseAdapterArgs() []string {
	return []string{"--prometheus-header=" + tenantHeader + "=" + tenant}
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	start := time.Now()
	defer func() { fmt.Printf("thanos e2e: package wall time %v\n", time.Since(start).Round(time.Millisecond)) }()
	e := exporter.New()
	if err := e.Listen(""); err != nil {
		fmt.Fprintf(os.Stderr, "thanos e2e: exporter: %v\n", err)
		return 1
	}
	defer e.Close()
	for pod, v := range podInflight {
		l := map[string]string{"namespace": namespace, "pod": pod}
		e.SetGauge(inflight, l, v)
		e.AddCounter(requests, l, 0)
	}
	e.SetGauge(queue, map[string]string{"queue": queueName}, queueValue)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { countRequests(stop, e) })
	defer func() { close(stop); wg.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute) // a cold thanos build included
	c, err := cluster.Start(ctx, cluster.Options{
		RulesYAML:         []byte(rulesYAML),
		PrometheusTargets: []promtest.Target{{Addr: e.Addr(), Job: "ha", HonorLabels: true}},
		HAPrometheus: &cluster.HAPrometheus{
			Replicas:       2,
			ExternalLabels: map[string]string{"tenant": tenant},
			QueryArgs: []string{
				"--query.enforce-tenancy",
				"--query.tenant-label-name=tenant",
				"--query.tenant-header=" + tenantHeader,
			},
			URLQuery: "partial_response=true",
		},
		AdapterArgs: baseAdapterArgs(),
		Log:         os.Stdout,
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "thanos e2e: %v\n", err)
		return 1
	}
	shared.cluster, shared.exporter = c, e
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "thanos e2e: stop cluster: %v\n", err)
		}
	}()
	if err := createPods(context.Background(), c); err != nil {
		fmt.Fprintf(os.Stderr, "thanos e2e: %v\n", err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, c.DumpLogs(40))
	}
	return code
}

// countRequests grows every pod's counter by requestsPerSecond until stop.
func countRequests(stop <-chan struct{}, e *exporter.Exporter) {
	const tick = 100 * time.Millisecond
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for pod := range podInflight {
				e.AddCounter(requests, map[string]string{"namespace": namespace, "pod": pod}, requestsPerSecond*tick.Seconds())
			}
		}
	}
}

// createPods creates the namespace and a Pod per fixture pod, so that
// requests for `*` pods list them.
func createPods(ctx context.Context, c *cluster.Cluster) error {
	client := c.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace: %w", err)
	}
	for pod := range podInflight {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: namespace, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{
				NodeName:                     cluster.NodeName(0),
				AutomountServiceAccountToken: new(bool),
				Containers:                   []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}},
			},
		}
		// The ServiceAccount admission plugin refuses pods until
		// kube-controller-manager has created the namespace's default account.
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, last = client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
			return last == nil || apierrors.IsAlreadyExists(last), nil
		})
		if err != nil {
			return fmt.Errorf("create pod %s: %w", pod, last)
		}
	}
	return nil
}
