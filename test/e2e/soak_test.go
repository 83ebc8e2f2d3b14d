package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/poll"
)

// soakPods is the number of pods the `*` requests cover.
const soakPods = 1000

// soakDuration is EBBFLOW_SOAK_DURATION (default 30s, `make soak`: 5m).
func soakDuration(t *testing.T) time.Duration {
	d := 30 * time.Second
	if v := os.Getenv("EBBFLOW_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 20*time.Second || d > 2*time.Hour {
			t.Fatalf("EBBFLOW_SOAK_DURATION=%q: want a duration in [20s, 2h]", v)
		}
	}
	return d
}

// TestAdapterSoak drives ebbflow-adapter through kube-apiserver at 200
// requests/s for EBBFLOW_SOAK_DURATION — custom metrics of one pod, of `*`
// over 1,000 pods and of a selector, an external metric, metrics.k8s.io pod
// metrics, and 20/s unknown metric names — while the rule file is reloaded
// (valid, then invalid) and Prometheus is restarted once. Outside
// Prometheus' down window every request must succeed (unknown names: 404);
// inside it, failures must be 500s with the generic message. It records the
// latency per kind, the adapter's RSS, heap and goroutines and the load on
// Prometheus, and checks that memory and goroutines do not grow after the
// warm-up and that the on-demand discovery rate limit holds. With
// EBBFLOW_SOAK_PROFILES=DIR it saves the adapter's heap profile every 5 s.
func TestAdapterSoak(t *testing.T) {
	d := soakDuration(t)
	waitDiscovered(t)
	ns := newNamespace(t, "e2e-soak-")
	createSoakPods(t, ns)
	queue := setQueue(t, ns+"-q", 42)
	paths := soakPaths(ns, queue.name)
	waitStar(t, paths(kindStar))

	probe, err := newAdapterProbe()
	if err != nil {
		t.Fatal(err)
	}
	load, err := newSoakLoad(env().RESTConfig(), paths)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env().WriteRules([]byte(rulesYAML)); err != nil {
			t.Errorf("restore rules: %v", err)
		}
		if !env().Prometheus().Running() {
			ensurePrometheus(t)
		}
	})
	before, err := probe.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { probe.sample(ctx) })
	loadCtx, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	start := time.Now()
	wg.Go(func() { load.run(loadCtx) })
	if dir := os.Getenv("EBBFLOW_SOAK_PROFILES"); dir != "" {
		wg.Go(func() { probe.heapProfiles(loadCtx, dir, start, 5*time.Second) })
	}

	outage := soakFaults(t, start, d, ns)
	<-loadCtx.Done()
	end := time.Now()
	time.Sleep(3 * time.Second) // requests in flight finish, idle connections settle
	after, err := probe.read(context.Background())
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	report := soakReport{d: d, start: start, end: end, outage: outage, before: before, after: after, load: load, probe: probe}
	t.Log("\n" + report.String())
	for _, p := range report.problems() {
		t.Error(p)
	}
}

// soakPaths returns, per kind, the path of the next request (random pod,
// group or unknown name where the kind varies).
func soakPaths(ns, queue string) func(string) string {
	custom := "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + ns + "/pods/"
	return func(kind string) string {
		switch kind {
		case kindSingle:
			return custom + fmt.Sprintf("soak-%04d/", rand.IntN(soakPods)) + InflightGauge
		case kindStar:
			return custom + "*/" + InflightGauge
		case kindSelector:
			return custom + "*/" + InflightGauge + "?labelSelector=" + url.QueryEscape(fmt.Sprintf("group=g%d", rand.IntN(10)))
		case kindExternal:
			return "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + ns + "/" + QueueGauge + "?labelSelector=" + url.QueryEscape("queue="+queue)
		case kindResource:
			return "/apis/metrics.k8s.io/v1beta1/namespaces/" + fixtureNamespace + "/pods"
		default:
			// A name the http_requests_total rule could produce, so each
			// one asks for an on-demand discovery (rate-limited).
			return custom + "*/" + randomName() + "_per_second"
		}
	}
}

// soakFaults runs the faults on the schedule (rules valid at 25%, invalid at
// 45%, Prometheus stopped at 60% for 3s) and returns Prometheus' down window:
// from the stop to 5s after Prometheus answers a value for every soak pod of
// ns again (after its first scrape of the exporter: a stopped Prometheus
// marks its series stale, and on a loaded machine that first scrape can come
// several seconds after it is ready).
func soakFaults(t *testing.T, start time.Time, d time.Duration, ns string) window {
	t.Helper()
	at := func(f float64) { time.Sleep(time.Until(start.Add(time.Duration(f * float64(d))))) }
	at(0.25)
	if err := env().WriteRules([]byte(rulesYAML + "\n# soak: reloaded, same rules\n")); err != nil {
		t.Fatal(err)
	}
	at(0.45)
	if err := env().WriteRules([]byte("rules:\n- seriesQuery: 'x{'\n  notAField: true\n")); err != nil {
		t.Fatal(err)
	}
	at(0.6)
	prom := env().Prometheus()
	w := window{from: time.Now()}
	prom.Stop()
	time.Sleep(3 * time.Second)
	ensurePrometheus(t)
	query := fmt.Sprintf(`count(%s{namespace=%q})`, InflightGauge, ns)
	poll.Until(t, time.Minute, "Prometheus answers every soak pod after its restart", func() error {
		v, err := prom.Query(context.Background(), query)
		if err != nil {
			return err
		}
		if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || int(vec[0].Value) != soakPods {
			return fmt.Errorf("%s = %v, want %d", query, v, soakPods)
		}
		return nil
	})
	w.to = time.Now().Add(5 * time.Second)
	t.Logf("Prometheus down from +%v to +%v (incl. 5s after it answered)", w.from.Sub(start).Round(time.Millisecond), w.to.Sub(start).Round(time.Millisecond))
	return w
}

// createSoakPods creates soakPods Pending pods (no node: nothing for kwok to
// run) labelled group=g0..g9, and an e2e_inflight series for each.
func createSoakPods(t *testing.T, ns string) {
	t.Helper()
	jobs := make(chan int)
	errs := make(chan error, soakPods)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range jobs {
				name := fmt.Sprintf("soak-%04d", i)
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "soak", "group": fmt.Sprintf("g%d", i%10)}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				}
				if _, err := env().Client().CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
				labels := map[string]string{"namespace": ns, "pod": name, "service": "soak"}
				exp().SetGauge(InflightGauge, labels, float64(i%7+1))
			}
		})
	}
	for i := range soakPods {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create pod: %v", err)
	}
	t.Cleanup(func() {
		for i := range soakPods {
			exp().Delete(InflightGauge, map[string]string{"namespace": ns, "pod": fmt.Sprintf("soak-%04d", i), "service": "soak"})
		}
	})
}

// waitStar waits until the `*` request answers a value for every pod.
func waitStar(t *testing.T, path string) {
	t.Helper()
	poll.Until(t, 2*time.Minute, "1,000 pod values", func() error {
		body, err := env().Client().CoreV1().RESTClient().Get().AbsPath(path).DoRaw(context.Background())
		if err != nil {
			return err
		}
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return err
		}
		if len(list.Items) != soakPods {
			return fmt.Errorf("%d values", len(list.Items))
		}
		return nil
	})
}
