package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmv1beta1 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/test/poll"
)

// Group kinds of the objects metrics describe.
var (
	podKind       = schema.GroupKind{Kind: "Pod"}
	serviceKind   = schema.GroupKind{Kind: "Service"}
	namespaceKind = schema.GroupKind{Kind: "Namespace"}
)

// clients returns the custom (preferred version, v1beta2) and external
// metrics clients, both going through kube-apiserver as the admin user.
func clients(t *testing.T) (custom_metrics.CustomMetricsClient, external_metrics.ExternalMetricsClient) {
	t.Helper()
	cm, em, err := env().MetricsClients()
	if err != nil {
		t.Fatal(err)
	}
	return cm, em
}

// promValue evaluates query directly against Prometheus at ts and returns the
// value of its only sample.
func promValue(t *testing.T, query string, ts time.Time) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, err := env().Prometheus().API().Query(ctx, query, ts)
	if err != nil {
		t.Fatalf("query %q: %v", query, err)
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		t.Fatalf("query %q at %v: want one sample, got %v", query, ts, v)
	}
	return float64(vec[0].Value)
}

// discovered returns the resource names listed by a metrics group version.
func discovered(groupVersion string) ([]string, error) {
	list, err := env().Client().Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	return names, nil
}

// waitDiscovered waits until the adapter's discovery lists every metric of
// the rule file for every resource it maps to.
func waitDiscovered(t *testing.T) {
	t.Helper()
	want := map[string][]string{
		"custom.metrics.k8s.io/v1beta2":   customResources(),
		"custom.metrics.k8s.io/v1beta1":   customResources(),
		"external.metrics.k8s.io/v1beta1": {QueueGauge},
	}
	for gv, names := range want {
		poll.Until(t, 90*time.Second, "discovery of "+gv, func() error {
			got, err := discovered(gv)
			if err != nil {
				return err
			}
			for _, n := range names {
				if !slices.Contains(got, n) {
					return fmt.Errorf("%s lacks %s; has %v", gv, n, got)
				}
			}
			return nil
		})
	}
}

func customResources() []string {
	var out []string
	for _, m := range []string{RequestsMetric, InflightGauge} {
		for _, r := range []string{"pods", "services", "namespaces"} {
			out = append(out, r+"/"+m)
		}
	}
	return out
}

func TestAPIServicesAvailable(t *testing.T) {
	names := env().APIServiceNames()
	slices.Sort(names)
	want := []string{"v1.metrics.k8s.io", "v1beta1.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io", "v1beta1.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}
	if !slices.Equal(names, want) {
		t.Errorf("APIServices %v, want %v", names, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := env().WaitAPIServicesAvailable(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoveryListsRuleMetrics(t *testing.T) {
	waitDiscovered(t)
	// Metrics are listed only for resources their series carry labels for.
	custom, err := discovered("custom.metrics.k8s.io/v1beta2")
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"pods/" + QueueGauge, "nodes/" + InflightGauge, "pods/" + RequestsCounter} {
		if slices.Contains(custom, absent) {
			t.Errorf("custom.metrics.k8s.io/v1beta2 lists %s, which no rule produces", absent)
		}
	}
}

func TestPodMetricsEqualPromQL(t *testing.T) {
	waitDiscovered(t)
	cm, _ := clients(t)
	pods := cm.NamespacedMetrics(fixtureNamespace)

	var list []podValue
	poll.Until(t, 30*time.Second, "pods/* "+InflightGauge, func() error {
		l, err := pods.GetForObjects(podKind, labels.Everything(), InflightGauge, labels.Everything())
		if err != nil {
			return err
		}
		list = list[:0]
		for _, it := range l.Items {
			list = append(list, podValue{it.DescribedObject.Name, it.Value.AsApproximateFloat64(), it.Timestamp.Time})
		}
		if len(list) != len(fixturePods()) {
			return fmt.Errorf("got %d items %v, want %d", len(list), list, len(fixturePods()))
		}
		return nil
	})
	byName := map[string]podValue{}
	for _, v := range list {
		byName[v.name] = v
	}
	for _, p := range fixturePods() {
		got, ok := byName[p.name]
		if !ok {
			t.Errorf("pods/*: no value for %s", p.name)
			continue
		}
		q := fmt.Sprintf(`sum(%s{namespace=%q,pod=%q}) by (pod)`, InflightGauge, fixtureNamespace, p.name)
		if want := promValue(t, q, got.ts); got.value != want || got.value != p.inflight {
			t.Errorf("pods/* %s: adapter %v, PromQL %v, published %v", p.name, got.value, want, p.inflight)
		}
	}

	// A label selector picks the web pods only.
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	web, err := pods.GetForObjects(podKind, sel, InflightGauge, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(web.Items) != 3 {
		t.Errorf("pods with app=web: %d items, want 3", len(web.Items))
	}
	for _, it := range web.Items {
		if !strings.HasPrefix(it.DescribedObject.Name, "web-") {
			t.Errorf("selector app=web returned %s", it.DescribedObject.Name)
		}
	}

	// By name.
	one, err := pods.GetForObject(podKind, "web-1", InflightGauge, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf(`sum(%s{namespace=%q,pod="web-1"}) by (pod)`, InflightGauge, fixtureNamespace)
	if got, want := one.Value.AsApproximateFloat64(), promValue(t, q, one.Timestamp.Time); got != want || got != 5.5 {
		t.Errorf("pods/web-1: adapter %v, PromQL %v, published 5.5", got, want)
	}
}

type podValue struct {
	name  string
	value float64
	ts    time.Time
}

func (p podValue) String() string { return fmt.Sprintf("%s=%v", p.name, p.value) }

// TestV1beta1PodMetrics reads the older API version, which HPAs of older
// clients still use, through kube-apiserver.
func TestV1beta1PodMetrics(t *testing.T) {
	waitDiscovered(t)
	path := fmt.Sprintf("/apis/custom.metrics.k8s.io/v1beta1/namespaces/%s/pods/*/%s", fixtureNamespace, InflightGauge)
	var list cmv1beta1.MetricValueList
	poll.Until(t, 30*time.Second, "v1beta1 pods/*", func() error {
		raw, err := env().Client().Discovery().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
		if err != nil {
			return err
		}
		list = cmv1beta1.MetricValueList{}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if len(list.Items) != len(fixturePods()) {
			return fmt.Errorf("got %d items, want %d", len(list.Items), len(fixturePods()))
		}
		return nil
	})
	for _, it := range list.Items {
		if it.MetricName != InflightGauge {
			t.Errorf("metricName %q, want %q", it.MetricName, InflightGauge)
		}
		q := fmt.Sprintf(`sum(%s{namespace=%q,pod=%q}) by (pod)`, InflightGauge, fixtureNamespace, it.DescribedObject.Name)
		if got, want := it.Value.AsApproximateFloat64(), promValue(t, q, it.Timestamp.Time); got != want {
			t.Errorf("v1beta1 %s: adapter %v, PromQL %v", it.DescribedObject.Name, got, want)
		}
	}
}

func TestNamespaceAndObjectMetricsEqualPromQL(t *testing.T) {
	waitDiscovered(t)
	cm, _ := clients(t)

	ns, err := cm.RootScopedMetrics().GetForObject(namespaceKind, fixtureNamespace, InflightGauge, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, p := range fixturePods() {
		total += p.inflight
	}
	q := fmt.Sprintf(`sum(%s{namespace=%q}) by (namespace)`, InflightGauge, fixtureNamespace)
	if got, want := ns.Value.AsApproximateFloat64(), promValue(t, q, ns.Timestamp.Time); got != want || got != total {
		t.Errorf("namespace %s: adapter %v, PromQL %v, published sum %v", fixtureNamespace, got, want, total)
	}

	for svc, want := range map[string]float64{"web": 15.5, "worker": 11} {
		v, err := cm.NamespacedMetrics(fixtureNamespace).GetForObject(serviceKind, svc, InflightGauge, labels.Everything())
		if err != nil {
			t.Fatalf("service %s: %v", svc, err)
		}
		q := fmt.Sprintf(`sum(%s{namespace=%q,service=%q}) by (service)`, InflightGauge, fixtureNamespace, svc)
		if got, prom := v.Value.AsApproximateFloat64(), promValue(t, q, v.Timestamp.Time); got != prom || got != want {
			t.Errorf("service %s: adapter %v, PromQL %v, published sum %v", svc, got, prom, want)
		}
		if v.DescribedObject.Kind != "Service" || v.DescribedObject.Name != svc {
			t.Errorf("service %s: describedObject %+v", svc, v.DescribedObject)
		}
	}
}

// TestRateMetricsMatchPromQL compares a rate through the adapter with the
// same PromQL evaluated directly at the answer's timestamp (whole seconds,
// hence a tolerance) and with the rate the exporter produces. It runs in
// parallel, after the sequential tests, by when rate(...[1m]) has a full
// minute of samples.
func TestRateMetricsMatchPromQL(t *testing.T) {
	t.Parallel()
	waitDiscovered(t)
	cm, _ := clients(t)
	const tolerance = 0.03
	// rate(...[1m]) reaches the produced rate once a minute of samples exists.
	poll.Until(t, 2*time.Minute, "web-2 rate near the produced 6/s", func() error {
		v, err := cm.NamespacedMetrics(fixtureNamespace).GetForObject(podKind, "web-2", RequestsMetric, labels.Everything())
		if err != nil {
			return err
		}
		if got := v.Value.AsApproximateFloat64(); !near(got, 6, 0.05) {
			return fmt.Errorf("web-2 %s = %v", RequestsMetric, got)
		}
		return nil
	})

	list, err := cm.NamespacedMetrics(fixtureNamespace).GetForObjects(podKind, labels.Everything(), RequestsMetric, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	rates := map[string]float64{}
	for _, p := range fixturePods() {
		rates[p.name] = p.rate
	}
	if len(list.Items) != len(rates) {
		t.Errorf("pods/* %s: %d items, want %d", RequestsMetric, len(list.Items), len(rates))
	}
	for _, it := range list.Items {
		name := it.DescribedObject.Name
		got := it.Value.AsApproximateFloat64()
		q := fmt.Sprintf(`sum(rate(%s{namespace=%q,pod=%q}[1m])) by (pod)`, RequestsCounter, fixtureNamespace, name)
		if prom := promValue(t, q, it.Timestamp.Time); !near(got, prom, tolerance) || !near(got, rates[name], 0.1) {
			t.Errorf("pod %s %s: adapter %v, PromQL %v, produced %v", name, RequestsMetric, got, prom, rates[name])
		}
	}

	v, err := cm.NamespacedMetrics(fixtureNamespace).GetForObject(serviceKind, "web", RequestsMetric, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf(`sum(rate(%s{namespace=%q,service="web"}[1m])) by (service)`, RequestsCounter, fixtureNamespace)
	if got, prom := v.Value.AsApproximateFloat64(), promValue(t, q, v.Timestamp.Time); !near(got, prom, tolerance) || !near(got, 12, 0.1) {
		t.Errorf("service web %s: adapter %v, PromQL %v, produced 12", RequestsMetric, got, prom)
	}
}

// near reports whether got is within the relative tolerance of want.
func near(got, want, tolerance float64) bool {
	return math.Abs(got-want) <= tolerance*math.Abs(want)
}

func TestExternalMetricEqualsPromQL(t *testing.T) {
	waitDiscovered(t)
	_, em := clients(t)
	for queue, published := range fixtureQueues() {
		sel := labels.SelectorFromSet(labels.Set{"queue": queue})
		list, err := em.NamespacedMetrics(fixtureNamespace).List(QueueGauge, sel)
		if err != nil {
			t.Fatalf("queue %s: %v", queue, err)
		}
		if len(list.Items) != 1 {
			t.Fatalf("queue %s: %d items, want 1: %+v", queue, len(list.Items), list.Items)
		}
		it := list.Items[0]
		q := fmt.Sprintf(`sum(%s{queue=%q}) by (queue)`, QueueGauge, queue)
		if got, prom := it.Value.AsApproximateFloat64(), promValue(t, q, it.Timestamp.Time); got != prom || got != published {
			t.Errorf("queue %s: adapter %v, PromQL %v, published %v", queue, got, prom, published)
		}
		if it.MetricLabels["queue"] != queue {
			t.Errorf("queue %s: metricLabels %v", queue, it.MetricLabels)
		}
	}

	// Without a selector every queue is listed (other tests may add more).
	all, err := em.NamespacedMetrics(fixtureNamespace).List(QueueGauge, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]float64{}
	for _, it := range all.Items {
		seen[it.MetricLabels["queue"]] = it.Value.AsApproximateFloat64()
	}
	for queue, published := range fixtureQueues() {
		if seen[queue] != published {
			t.Errorf("unselected list: queue %s = %v, want %v (all: %v)", queue, seen[queue], published, seen)
		}
	}
}
