package discovery

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// TestRelistAfterOutageKeepsUnlistedMetrics: the first relist after a Prometheus
// outage longer than MaxAge lists nothing (no scrape yet); the metrics stay served
// until a relist that starts MaxAge after the first successful relist.
func TestRelistAfterOutageKeepsUnlistedMetrics(t *testing.T) {
	const maxAge = time.Minute
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	client := &fake.Client{SeriesByMatch: testSeries()}
	reg := prometheus.NewRegistry()
	d, err := New(Options{Client: client, Scope: MapperScope{Mapper: rulefile.DefaultRESTMapper()}, MaxAge: maxAge, Clock: clk, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(compileRules(t, testRules))
	relist := func(wantErr bool) {
		t.Helper()
		if err := d.Relist(context.Background()); (err != nil) != wantErr {
			t.Fatalf("Relist at %v: error %v, want error %v", clk.Now().Unix(), err, wantErr)
		}
	}
	served := func() bool {
		_, ok := d.Registry().Custom(podMetric("http_requests_per_second"))
		_, ext := d.Registry().External("queue_messages_ready")
		return ok && ext
	}
	carried := func() float64 {
		return testutil.ToFloat64(d.metrics.carried.WithLabelValues("default"))
	}

	relist(false)
	if !served() {
		t.Fatal("metrics not discovered")
	}
	// Prometheus down for two relists, then back with nothing scraped yet. The
	// relists come one max age (the default relist interval) apart, give or take
	// the ticker's jitter.
	client.SetErr(errors.New("connection refused"))
	clk.Step(maxAge)
	relist(true)
	clk.Step(maxAge)
	relist(true)
	client.SetErr(nil)
	client.SeriesByMatch = map[string][]fake.Series{}
	clk.Step(maxAge + time.Millisecond)
	relist(false)
	if !served() {
		t.Fatal("metrics dropped by the first relist after the outage")
	}
	if got := carried(); got == 0 {
		t.Error("carried_over_entries = 0 while metrics are kept")
	}
	// The next relist, less than a max age after the first success, may still
	// reach into the outage.
	clk.Step(maxAge - time.Millisecond)
	relist(false)
	if !served() {
		t.Fatal("metrics dropped by a relist whose window reaches into the outage")
	}
	// A relist one max age after the first success lists what was scraped since:
	// what it does not list is gone.
	clk.Step(time.Millisecond)
	relist(false)
	if served() {
		t.Error("metrics still served by a relist whose window lies after the outage")
	}
	if got := carried(); got != 0 {
		t.Errorf("carried_over_entries = %v, want 0", got)
	}

	// Without a failure, a metric that is not listed is dropped at once.
	client.SeriesByMatch = testSeries()
	clk.Step(maxAge)
	relist(false)
	client.SeriesByMatch = map[string][]fake.Series{}
	clk.Step(maxAge)
	relist(false)
	if served() {
		t.Error("metric kept although no relist failed")
	}
}

// TestCarryOverNeedsSameRules: entries of rules that were replaced are not carried
// over, even right after a failure.
func TestCarryOverNeedsSameRules(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_000_000, 0))
	client := &fake.Client{SeriesByMatch: testSeries()}
	d, err := New(Options{Client: client, Scope: MapperScope{Mapper: rulefile.DefaultRESTMapper()}, MaxAge: time.Hour, Clock: clk, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(compileRules(t, testRules))
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	client.SetErr(errors.New("down"))
	if err := d.Relist(context.Background()); err == nil {
		t.Fatal("want error")
	}
	client.SetErr(nil)
	d.SetRules(rulestest.Parse(t, rulestest.ClusterQueue).Rules)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Registry().Custom(podMetric("http_requests_per_second")); ok {
		t.Error("a metric of the replaced rules was carried over")
	}
	tg, ok := d.Registry().External("queue_messages_ready")
	if !ok || tg.Rule.Index() != 0 {
		t.Errorf("external metric %v %v, want the new rule's", tg, ok)
	}
}
