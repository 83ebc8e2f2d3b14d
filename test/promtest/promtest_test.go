package promtest_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// requestsPerSecond is the rate at which driveCounter grows the counter.
const requestsPerSecond = 100

// driveCounter grows name{labels} by requestsPerSecond per wall-clock second
// until the test ends, so rate() over any window should be close to it.
func driveCounter(t *testing.T, e *exporter.Exporter, name string, labels map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				e.AddCounter(name, labels, requestsPerSecond*now.Sub(last).Seconds())
				last = now
			}
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

const (
	counterSelector = `http_requests_total{namespace="ns1",pod="web-0"}`
	rateQuery       = `rate(` + counterSelector + `[5s])`
)

// checkRate waits until the last 6s hold at least 6 samples of the counter,
// so a 5s window is fully populated and rate() is no longer a rising
// transient, then checks once that rate() is within 20% of requestsPerSecond
// (scrape jitter on a loaded machine moves a 5s rate by several percent).
func checkRate(ctx context.Context, t *testing.T, prom *promtest.Server) {
	t.Helper()
	full := `count_over_time(` + counterSelector + `[6s]) >= 6`
	if _, err := prom.WaitForVector(ctx, full, func(v model.Vector) bool { return len(v) == 1 }); err != nil {
		t.Fatalf("5s window never filled: %v", err)
	}
	v, err := prom.Query(ctx, rateQuery)
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 {
		t.Fatalf("%s = %v, want one sample", rateQuery, v)
	}
	if got := float64(vec[0].Value); got < 0.8*requestsPerSecond || got > 1.2*requestsPerSecond {
		t.Fatalf("%s = %v, want %v ± 20%%", rateQuery, got, requestsPerSecond)
	}
	t.Logf("%s = %v", rateQuery, vec[0].Value)
}

func TestScrapeRateAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	exp := exporter.New()
	exp.Start(t)
	web0 := map[string]string{"namespace": "ns1", "pod": "web-0", "service": "web"}
	driveCounter(t, exp, "http_requests_total", web0)
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 42)

	started := time.Now()
	prom := promtest.Start(t, promtest.Options{
		Targets: []promtest.Target{{Addr: exp.Addr(), Job: "exporter", HonorLabels: true}},
	})
	if !strings.HasPrefix(prom.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %q, want a 127.0.0.1 URL", prom.URL())
	}

	series, err := prom.WaitForSeries(ctx, `http_requests_total{namespace="ns1"}`, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first series after %v", time.Since(started))
	want := model.LabelSet{"__name__": "http_requests_total", "namespace": "ns1", "pod": "web-0",
		"service": "web", "job": "exporter", "instance": model.LabelValue(exp.Addr())}
	if len(series) != 1 || !series[0].Equal(want) {
		t.Fatalf("series = %v, want [%v]", series, want)
	}

	checkRate(ctx, t, prom)

	gauge, err := prom.WaitForVector(ctx, `queue_messages_ready{queue="orders"}`, func(v model.Vector) bool {
		return len(v) == 1 && v[0].Value == 42
	})
	if err != nil {
		t.Fatalf("gauge: %v (got %v)", err, gauge)
	}

	// A metric name that did not exist when Prometheus started.
	exp.SetGauge("late_metric", map[string]string{"namespace": "ns1"}, 1)
	if _, err := prom.WaitForSeries(ctx, "late_metric", 1); err != nil {
		t.Fatal(err)
	}

	samplesBefore := countSamples(ctx, t, prom)

	prom.Stop()
	if prom.Running() {
		t.Error("Running() = true after Stop")
	}
	if _, err := prom.Query(ctx, "up"); err == nil {
		t.Fatal("query succeeded while Prometheus is stopped")
	}

	url := prom.URL()
	if err := prom.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("restart ready after %v", prom.ReadyAfter())
	if prom.URL() != url {
		t.Errorf("URL changed across restart: %s -> %s", url, prom.URL())
	}

	// Data from before the stop survives (same TSDB directory).
	if after := countSamples(ctx, t, prom); after < samplesBefore {
		t.Errorf("samples after restart = %v, want >= %v from before the stop", after, samplesBefore)
	}
	// And scraping resumes: a sample newer than the restart arrives, and the
	// rate over a window after the restart is right again.
	if _, err := prom.WaitForVector(ctx, `timestamp(http_requests_total{pod="web-0"})`, func(v model.Vector) bool {
		return len(v) == 1 && float64(v[0].Value) > float64(restarted.UnixMilli())/1000
	}); err != nil {
		t.Fatalf("no sample after restart: %v", err)
	}
	checkRate(ctx, t, prom)
}

// countSamples returns how many samples of the web-0 counter Prometheus holds.
func countSamples(ctx context.Context, t *testing.T, prom *promtest.Server) model.SampleValue {
	t.Helper()
	v, err := prom.Query(ctx, `count_over_time(http_requests_total{pod="web-0"}[1h])`)
	if err != nil {
		t.Fatal(err)
	}
	vec, ok := v.(model.Vector)
	if !ok || len(vec) != 1 || vec[0].Value < 2 {
		t.Fatalf("count_over_time = %v, want one sample count >= 2", v)
	}
	return vec[0].Value
}

// TestSetTargetsReloads also covers Options.RulesYAML.
func TestSetTargetsReloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	prom := promtest.Start(t, promtest.Options{
		ScrapeInterval: 500 * time.Millisecond,
		RulesYAML:      "groups:\n- name: test\n  rules:\n  - record: test:one\n    expr: vector(1)\n",
	})
	if _, err := prom.WaitForSeries(ctx, "test:one", 1); err != nil {
		t.Fatalf("recording rule: %v", err)
	}
	exp := exporter.New()
	exp.Start(t)
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 7)

	if err := prom.SetTargets(ctx, []promtest.Target{{Addr: exp.Addr(), Job: "late"}}); err != nil {
		t.Fatal(err)
	}
	series, err := prom.WaitForSeries(ctx, `queue_messages_ready{job="late"}`, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := series[0]["queue"]; got != "orders" {
		t.Errorf("queue label = %q, want orders", got)
	}

	if err := prom.SetTargets(ctx, []promtest.Target{{Addr: "10.0.0.1:9100"}}); err == nil {
		t.Error("SetTargets accepted a non-loopback target")
	}
}

func TestStartProcessReportsStartupFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	_, err := promtest.StartProcess(ctx, promtest.Options{Dir: dir, ExtraArgs: []string{"--no-such-flag"}})
	if err == nil {
		t.Fatal("StartProcess succeeded with an unknown flag")
	}
	if !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("error does not show the log tail: %v", err)
	}
}

func TestRestartWhilePortTaken(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	prom.Stop()

	// An impostor on the port that claims to be ready must not be mistaken
	// for the restarted Prometheus.
	ln, err := net.Listen("tcp", prom.Addr())
	if err != nil {
		t.Fatal(err)
	}
	impostor := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = impostor.Serve(ln) }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = prom.Restart(ctx)
	if err == nil {
		t.Fatal("Restart succeeded while another server holds the port")
	}
	t.Logf("restart while the port is taken: %.200v", err)
	if err := impostor.Close(); err != nil {
		t.Fatal(err)
	}
	if err := prom.Restart(context.Background()); err != nil {
		t.Fatalf("Restart after the port was freed: %v", err)
	}
	if _, err := prom.Query(context.Background(), "vector(1)"); err != nil {
		t.Fatal(err)
	}
}
