package discovery

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

func nodesInfo(metric string) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "nodes"}, Metric: metric}
}

func TestOnDemandOneCallPerSeriesQuery(t *testing.T) {
	tests := []struct {
		metric string
		calls  int
	}{
		// Rules 0 and 2 share a query and rule 1 has its own: two calls, not three.
		{"http_requests_per_second", 2},
		// Rule 2 names only http_requests_per_second; rules 0 and 1 could name this.
		{"http_logins_per_second", 2},
		// Only rule 1 (no name mapping) can produce a name without the suffix.
		{"node_cpu_total", 1},
		// A dash is in no rule's alphabet: nothing is asked.
		{"node-cpu", 0},
		{strings.Repeat("a", rules.MaxMetricNameLength+1), 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.30s", tt.metric), func(t *testing.T) {
			client := &fake.Client{SeriesByMatch: testSeries()}
			d := newTestDiscoverer(t, client, clocktesting.NewFakeClock(time.Now()))
			d.discoverCustom(context.Background(), nodesInfo(tt.metric))
			// Label-values calls carry the rules' queries; series calls the narrowed ones.
			var calls [][]string
			for _, c := range client.SeriesCalls() {
				if !strings.HasPrefix(c[0], `{__name__="`) {
					calls = append(calls, c)
				}
			}
			if len(calls) != tt.calls {
				t.Errorf("calls = %v, want %d (one per distinct series query of the rules that could name it)", calls, tt.calls)
			}
			if tt.calls == 0 && len(d.lastTry) != 0 {
				t.Errorf("a name no rule can produce was remembered: %d entries", len(d.lastTry))
			}
		})
	}
}

// TestOnDemandHostileNamesMemory sends 200 distinct 1 MB names one second apart (under
// the on-demand rate limit) and checks the heap does not keep them.
func TestOnDemandHostileNamesMemory(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	clk := clocktesting.NewFakeClock(time.Now())
	d := newTestDiscoverer(t, client, clk)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range 200 {
		name := fmt.Sprintf("m%03d_", i) + strings.Repeat("a", 1<<20)
		// The requests' own path: the lookups count the names refused.
		if _, _, err := d.LookupCustom(context.Background(), nodesInfo(name)); err == nil {
			t.Fatal("LookupCustom served a 1 MB name")
		}
		if _, err := d.LookupExternal(context.Background(), name); err == nil {
			t.Fatal("LookupExternal served a 1 MB name")
		}
		clk.Step(time.Second)
	}
	after := heap()
	runtime.KeepAlive(d)
	t.Logf("heap before %d KiB, after 200 names of 1 MB (custom and external) %d KiB", before>>10, after>>10)
	if after > before && after-before > 20<<20 {
		t.Errorf("heap grew by %d MB after 200 names of 1 MB, want < 20 MB", (after-before)>>20)
	}
	if calls := client.SeriesCalls(); len(calls) != 0 {
		t.Errorf("%d calls to Prometheus for names no metric can have", len(calls))
	}
	if got := testutil.ToFloat64(d.metrics.onDemand.WithLabelValues("invalid_name")); got != 400 {
		t.Errorf("on_demand_total{result=invalid_name} = %v, want 400", got)
	}
}

// TestOnDemandTrackedBytes checks the bytes of remembered attempts stay bounded for
// names of the largest accepted length.
func TestOnDemandTrackedBytes(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	clk := clocktesting.NewFakeClock(time.Now())
	d := newTestDiscoverer(t, client, clk)
	pad := strings.Repeat("a", rules.MaxMetricNameLength-8)
	for i := range 6000 {
		d.discoverExternal(context.Background(), fmt.Sprintf("%s%08d", pad, i))
		clk.Step(time.Second)
		if d.lastTryBytes > maxTrackedBytes {
			t.Fatalf("after %d names: %d bytes remembered, cap %d", i+1, d.lastTryBytes, maxTrackedBytes)
		}
	}
	total := 0
	for k := range d.lastTry {
		total += len(k)
	}
	if total != d.lastTryBytes {
		t.Errorf("accounted %d bytes, keys hold %d", d.lastTryBytes, total)
	}
}

func TestRelistSeriesCap(t *testing.T) {
	client := &fake.Client{SeriesByMatch: testSeries()}
	reg := prometheus.NewRegistry()
	d, err := New(Options{
		Client: client, Scope: MapperScope{Mapper: rulefile.DefaultRESTMapper()}, MaxAge: time.Hour,
		MaxSeries: 4, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(compileRules(t, testRules))
	err = d.Relist(context.Background()) // testSeries lists 6 series
	if !errors.Is(err, ErrTooManySeries) || !strings.Contains(err.Error(), "--metrics-max-series") {
		t.Fatalf("Relist over the cap: err = %v, want ErrTooManySeries naming the flag", err)
	}
	if d.Synced() || d.Registry() != nil && len(d.Registry().CustomMetrics()) != 0 {
		t.Error("a relist over the cap replaced the registry")
	}
	if got := testutil.ToFloat64(d.metrics.limited.WithLabelValues("default", "series")); got != 1 {
		t.Errorf("limit_exceeded_total{limit=series} = %v, want 1", got)
	}
	d.opts.MaxSeries = 6
	if err := d.Relist(context.Background()); err != nil {
		t.Errorf("Relist at the cap: %v", err)
	}
}

// TestLookup: one call answers a request's question, whatever the state of the
// registry: a hit without asking Prometheus, a miss discovered on demand, a typed 404
// (with the normalised resource, and a huge name shortened) for anything not served.
func TestLookup(t *testing.T) {
	series := testSeries()
	client := &fake.Client{SeriesByMatch: series}
	d := newTestDiscoverer(t, client, clocktesting.NewFakeClock(time.Now()))
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	logins := fake.Series{Name: "http_logins_total", Labels: map[string]string{"namespace": "a", "pod": "p1"}}
	q := `{__name__=~"^http_.*_total$",namespace!="",pod!=""}`
	series[q] = append(series[q], logins) // appears after the relist
	series[`{__name__="http_logins_total",__name__=~"^http_.*_total$",namespace!="",pod!=""}`] = []fake.Series{logins}
	ctx := context.Background()
	pod := func(metric string) provider.CustomMetricInfo {
		return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pod"}, Namespaced: true, Metric: metric}
	}

	calls := len(client.SeriesCalls())
	info, target, err := d.LookupCustom(ctx, provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "node"}, Metric: "node_load1"})
	if err != nil || target.Series != "node_load1" || info.GroupResource.Resource != "nodes" {
		t.Fatalf("hit: %+v %+v %v, want node_load1 for nodes (normalised)", info, target, err)
	}
	if n := len(client.SeriesCalls()); n != calls {
		t.Errorf("a hit asked Prometheus %d times", n-calls)
	}

	if _, target, err = d.LookupCustom(ctx, pod("http_logins_per_second")); err != nil || target.Series != "http_logins_total" {
		t.Fatalf("miss: %+v %v, want http_logins_total discovered on demand", target, err)
	}

	for _, tc := range []struct {
		name string
		info provider.CustomMetricInfo
		want string
	}{
		{"not served", pod("nope"), "nope for pods"},
		{"unknown resource", provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "widgets"}, Metric: "http_requests_per_second"}, "widgets"},
		{"impossible name", pod(strings.Repeat("x", 1000)), strings.Repeat("x", 64) + "... for pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := d.LookupCustom(ctx, tc.info)
			if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 200 {
				t.Errorf("err = %v, want a 404 naming %s", err, tc.want)
			}
		})
	}

	if target, err := d.LookupExternal(ctx, "queue_messages_ready"); err != nil || target.Series != "queue_messages_ready" {
		t.Errorf("external hit: %+v %v", target, err)
	}
	if _, err := d.LookupExternal(ctx, "no-such/metric"); !apierrors.IsNotFound(err) {
		t.Errorf("external impossible name: err = %v, want a 404", err)
	}
	if got := d.CustomMetrics(); len(got) != len(d.Registry().CustomMetrics()) || len(d.ExternalMetrics()) != 1 {
		t.Errorf("lists: %d custom, %d external", len(got), len(d.ExternalMetrics()))
	}
}

// discoverCustom runs the on-demand discovery LookupCustom runs on a miss, even
// for a metric already registered, and reports whether the registry now serves
// info (normalised): the tests drive the rate limits with it.
func (d *Discoverer) discoverCustom(ctx context.Context, info provider.CustomMetricInfo) bool {
	if !d.validName(info.Metric) {
		return false
	}
	d.discover(ctx, rules.Custom, info.Metric)
	_, ok := d.Registry().Custom(info)
	return ok
}

// discoverExternal is discoverCustom for an external metric.
func (d *Discoverer) discoverExternal(ctx context.Context, metric string) bool {
	if !d.validName(metric) {
		return false
	}
	d.discover(ctx, rules.External, metric)
	_, ok := d.Registry().External(metric)
	return ok
}
