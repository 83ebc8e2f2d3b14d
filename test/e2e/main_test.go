// Package e2e tests ebbflow end to end on a real local cluster (etcd,
// kube-apiserver, kube-controller-manager, kwok, Prometheus and
// ebbflow-adapter behind the aggregation layer), shared by all tests of the
// package and started once in TestMain.
//
// Run with `make test-e2e`; binaries come from hack/build-tools.sh and
// hack/install-prometheus.sh.
package e2e

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

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// Metric names published by the shared exporter and the metrics the rule
// file derives from them.
const (
	// RequestsCounter is a counter with labels namespace, pod, service; the
	// adapter serves its rate as RequestsMetric for pods, services and
	// namespaces.
	RequestsCounter = "http_requests_total"
	RequestsMetric  = "http_requests_per_second"
	// InflightGauge is a gauge with labels namespace, pod, service, served
	// under its own name for pods, services and namespaces (sum).
	InflightGauge = "e2e_inflight"
	// QueueGauge is a gauge with label queue, served as the external metric of
	// the same name (sum by queue, not namespaced).
	QueueGauge = "queue_messages_ready"
	// RatioZeroGauge and RatioDropGauge are gauges with label queue, each
	// served as the external metric of the same name with the value v/v: 1,
	// or NaN (0/0) when the gauge is 0, which the first rule serves as 0 (the
	// default) and the second drops (nanValues: drop).
	RatioZeroGauge = "e2e_ratio_zero"
	RatioDropGauge = "e2e_ratio_drop"
)

// rulesYAML is the adapter's rule file for the whole package.
const rulesYAML = `
rules:
- seriesQuery: '{__name__="http_requests_total",namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
      service: {resource: service}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
- seriesQuery: 'e2e_inflight{namespace!="",pod!=""}'
  resources:
    template: <<.Resource>>
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'e2e_ratio_zero{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue) / sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'e2e_ratio_drop{queue!=""}'
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue) / sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
  nanValues: drop
` + resourceRulesYAML

// shared is the package's environment, set once by TestMain before any test
// runs and only read afterwards.
var shared struct {
	cluster  *cluster.Cluster
	exporter *exporter.Exporter
}

// env returns the package's cluster. Tests must leave it usable for the next
// test: restart what they stop and restore the rule file they replace. Tests
// that stop or change shared components (adapter, Prometheus, rule file) must
// not call t.Parallel: parallel tests (TestRateMetricsMatchPromQL) read them
// after all sequential tests have finished.
func env() *cluster.Cluster { return shared.cluster }

// exp returns the exporter Prometheus scrapes every second (job "e2e",
// honor_labels). Tests own the series they create and should use their own
// namespace, pod and queue label values.
func exp() *exporter.Exporter { return shared.exporter }

func TestMain(m *testing.M) {
	// Run as Helm's post-renderer by a chart test (chart_apis_test.go).
	if svc := os.Getenv(postRenderServiceEnv); svc != "" {
		os.Exit(postRender(svc))
	}
	os.Exit(runMain(m))
}

// runMain starts the shared environment, runs the tests, prints the wall time
// and always tears everything down.
func runMain(m *testing.M) int {
	start := time.Now()
	defer func() { fmt.Printf("e2e: package wall time %v\n", time.Since(start).Round(time.Millisecond)) }()

	e := exporter.New()
	if err := e.Listen(""); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: exporter: %v\n", err)
		return 1
	}
	defer e.Close()
	publishFixture(e)
	stopCounters := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { counterLoop(stopCounters, e, fixturePods(), 100*time.Millisecond) })
	publishResourceFixture(e)
	wg.Go(func() { resourceCounterLoop(stopCounters, e, 100*time.Millisecond) })
	defer func() { close(stopCounters); wg.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	c, err := cluster.Start(ctx, cluster.Options{
		RulesYAML:         []byte(rulesYAML),
		PrometheusTargets: []promtest.Target{{Addr: e.Addr(), Job: "e2e", HonorLabels: true}},
		Log:               os.Stdout,
	})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	fmt.Printf("e2e: cluster up after %v\n", time.Since(start).Round(time.Millisecond))
	shared.cluster, shared.exporter = c, e
	if err := createFixture(context.Background(), c); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		_ = c.Stop()
		return 1
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop cluster: %v\n", err)
		}
	}()

	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, c.DumpLogs(40))
	}
	return code
}

// counterLoop adds rate×tick to each counter series every tick until stop
// is closed, giving steady per-second rates.
func counterLoop(stop <-chan struct{}, e *exporter.Exporter, series []fixturePod, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for _, p := range series {
				e.AddCounter(RequestsCounter, p.labels(), p.rate*tick.Seconds())
			}
		}
	}
}

// fixtureNamespace holds the static pods and services whose metrics the
// adapter and security tests read. Other tests must not publish series in it.
const fixtureNamespace = "e2e-metrics"

// fixturePod is one pod of the fixture with the constant values the exporter
// publishes for it.
type fixturePod struct {
	name, service string
	inflight      float64 // InflightGauge value
	rate          float64 // RequestsCounter increase per second
}

func (p fixturePod) labels() map[string]string {
	return map[string]string{"namespace": fixtureNamespace, "pod": p.name, "service": p.service}
}

// fixturePods returns the fixture's pods. Values have few binary digits so
// sums are exact in float64 and in resource.Quantity.
func fixturePods() []fixturePod {
	return []fixturePod{
		{"web-0", "web", 3, 2},
		{"web-1", "web", 5.5, 4},
		{"web-2", "web", 7, 6},
		{"worker-0", "worker", 11, 1},
	}
}

// fixtureQueues are the QueueGauge series of the fixture.
func fixtureQueues() map[string]float64 {
	return map[string]float64{"e2e-orders": 42, "e2e-billing": 7.25}
}

// publishFixture sets the fixture's gauges and creates its counters.
func publishFixture(e *exporter.Exporter) {
	for _, p := range fixturePods() {
		e.SetGauge(InflightGauge, p.labels(), p.inflight)
		e.AddCounter(RequestsCounter, p.labels(), 0)
	}
	for q, v := range fixtureQueues() {
		e.SetGauge(QueueGauge, map[string]string{"queue": q}, v)
	}
}

// createFixture creates the fixture namespace, a Pod per fixturePod (on the
// first kwok node, labelled app=<service>) and a Service per service name.
func createFixture(ctx context.Context, c *cluster.Cluster) error {
	client := c.Client()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace: %w", err)
	}
	// The ServiceAccount admission plugin refuses pods until
	// kube-controller-manager has created the namespace's default account.
	saCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := cluster.WaitDefaultServiceAccount(saCtx, client, fixtureNamespace); err != nil {
		return err
	}
	services := map[string]bool{}
	for _, p := range fixturePods() {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: fixtureNamespace, Labels: map[string]string{"app": p.service}},
			Spec: corev1.PodSpec{
				NodeName:   cluster.NodeName(0),
				Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}},
			},
		}
		if _, err := client.CoreV1().Pods(fixtureNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod %s: %w", p.name, err)
		}
		services[p.service] = true
	}
	for name := range services {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixtureNamespace},
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": name},
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
			},
		}
		if _, err := client.CoreV1().Services(fixtureNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create service %s: %w", name, err)
		}
	}
	return nil
}
