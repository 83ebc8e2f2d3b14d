package upstream

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

func ownOf(custom []string, external []string) *fakeOwn {
	o := &fakeOwn{custom: map[provider.CustomMetricInfo]bool{}, external: map[string]bool{}}
	for _, m := range custom {
		o.custom[podsMetric(m)] = true
	}
	for _, m := range external {
		o.external[m] = true
	}
	return o
}

var obj = types.NamespacedName{Namespace: "ns", Name: "p1"}

// TestRouting: Ebbflow's own rules answer what they serve, even when the
// upstream lists it too; the rest goes to the upstream listing it; a metric
// nobody lists is Ebbflow's 404.
func TestRouting(t *testing.T) {
	up := newFakeUpstream(t)
	up.set(func(f *fakeUpstream) {
		f.custom = []string{"pods/both", "pods/theirs"}
		f.external = []string{"s0-prometheus-queue", "both"}
	})
	r := newTestRouter(t, ownOf([]string{"both"}, []string{"both"}), prometheus.NewRegistry(), up.config("keda", GroupCustom, GroupExternal))
	for _, tc := range []struct {
		metric string
		want   string // value: 1 own, 7 upstream
	}{{"both", "1"}, {"theirs", "7"}} {
		v, err := r.GetMetricByName(t.Context(), obj, podsMetric(tc.metric), labels.Everything())
		if err != nil {
			t.Fatalf("%s: %v", tc.metric, err)
		}
		if v.Value.String() != tc.want {
			t.Errorf("%s: value %s, want %s", tc.metric, v.Value.String(), tc.want)
		}
	}
	if _, err := r.GetMetricByName(t.Context(), obj, podsMetric("nobody"), labels.Everything()); !apierrors.IsNotFound(err) {
		t.Errorf("nobody: %v, want 404", err)
	}
	sel := labels.SelectorFromSet(labels.Set{"queue": "orders"})
	ext, err := r.GetExternalMetric(t.Context(), "ns", sel, provider.ExternalMetricInfo{Metric: "s0-prometheus-queue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ext.Items) != 1 || ext.Items[0].Value.String() != "7" || ext.Items[0].MetricLabels["selector"] != "queue=orders" {
		t.Errorf("external answer %+v, want value 7 with the selector forwarded", ext.Items)
	}
	ext, err = r.GetExternalMetric(t.Context(), "ns", labels.Everything(), provider.ExternalMetricInfo{Metric: "both"})
	if err != nil || ext.Items[0].Value.String() != "1" {
		t.Errorf("external both: %v %v, want Ebbflow's own value 1", ext, err)
	}
	list, err := r.GetMetricBySelector(t.Context(), "ns", labels.Everything(), podsMetric("theirs"), labels.Everything())
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("selector: %v %v", list, err)
	}
	want := []string{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/p1/theirs",
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/s0-prometheus-queue?labelSelector=queue%3Dorders",
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/%2A/theirs",
	}
	for _, p := range want {
		if !slices.Contains(up.seen(), p) {
			t.Errorf("upstream never asked %s; it saw %v", p, up.seen())
		}
	}
	for _, a := range up.auth {
		if a != "Bearer "+fakeToken {
			t.Errorf("upstream saw Authorization %q, want Ebbflow's own token", a)
		}
	}
}

// TestUnionAndConflicts: discovery lists each name once; a name listed by
// Ebbflow and by upstreams is shadowed for the upstreams, one listed by two
// upstreams for the second, counted in shadowed_metrics.
func TestUnionAndConflicts(t *testing.T) {
	a, b := newFakeUpstream(t), newFakeUpstream(t)
	a.set(func(f *fakeUpstream) { f.custom = []string{"pods/mine", "pods/a"}; f.external = []string{"e1"} })
	b.set(func(f *fakeUpstream) { f.custom = []string{"pods/a", "pods/b"}; f.external = []string{"e1", "e2"} })
	reg := prometheus.NewRegistry()
	r := newTestRouter(t, ownOf([]string{"mine"}, nil), reg, a.config("a", GroupCustom, GroupExternal), b.config("b", GroupCustom, GroupExternal))
	var names []string
	for _, info := range r.ListAllMetrics() {
		names = append(names, info.Metric)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a", "b", "mine"}) {
		t.Errorf("custom discovery %v, want [a b mine]", names)
	}
	if ext := r.ListAllExternalMetrics(); len(ext) != 2 {
		t.Errorf("external discovery %v, want e1 and e2 once each", ext)
	}
	got := map[string][]string{}
	for _, s := range r.Conflicts() {
		got[s.Upstream+" "+s.Group] = s.Metrics
	}
	want := map[string][]string{
		"a " + GroupCustom: {"pods/mine"}, "a " + GroupExternal: nil,
		"b " + GroupCustom: {"pods/a"}, "b " + GroupExternal: {"e1"},
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("shadowed %s: %v, want %v", k, got[k], w)
		}
	}
	r.checkConflicts(t.Context(), map[string]int{})
	if v := testutil.ToFloat64(r.metrics.shadowed.WithLabelValues("b", GroupCustom)); v != 1 {
		t.Errorf("shadowed_metrics{b,custom} = %v, want 1", v)
	}
	v, err := r.GetMetricByName(t.Context(), obj, podsMetric("a"), labels.Everything())
	if err != nil || v.Value.String() != "7" {
		t.Fatalf("a: %v %v", v, err)
	}
	for _, p := range b.seen() {
		if strings.Contains(p, "/pods/p1/a") {
			t.Errorf("the second upstream was asked for a metric the first lists: %s", p)
		}
	}
}

// TestUpstreamFailures: whatever the upstream does wrong, its metric fails
// within its timeout as a 503 naming only the upstream (its 404 as Ebbflow's
// own 404), and Ebbflow's own metric keeps answering.
func TestUpstreamFailures(t *testing.T) {
	for _, mode := range []string{"hang", "garbage", "error", "forbidden", "huge", "notfound", "closed"} {
		t.Run(mode, func(t *testing.T) {
			up := newFakeUpstream(t)
			up.set(func(f *fakeUpstream) { f.custom = []string{"pods/theirs"} })
			cfg := up.config("slowpoke", GroupCustom)
			// Only a hanging upstream meets the timeout; the others fail on
			// their own fault well within it.
			cfg.Timeout.Duration = 10 * time.Second
			if mode == "hang" {
				cfg.Timeout.Duration = 300 * time.Millisecond
			}
			r := newTestRouter(t, ownOf([]string{"mine"}, nil), prometheus.NewRegistry(), cfg)
			if mode == "closed" {
				up.srv.Close()
			} else {
				up.set(func(f *fakeUpstream) { f.mode = mode })
			}
			start := time.Now()
			_, err := r.GetMetricBySelector(t.Context(), "ns", labels.Everything(), podsMetric("theirs"), labels.Everything())
			took := time.Since(start)
			if took > 5*time.Second {
				t.Errorf("the failed request took %s, want it bounded by its own fault or the 300ms timeout", took)
			}
			if mode == "notfound" {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("got %v, want 404", err)
				}
			} else if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), `upstream "slowpoke" unavailable`) {
				t.Fatalf("got %v, want 503 naming the upstream", err)
			}
			for _, leak := range []string{up.srv.URL, "127.0.0.1", "secret", "hunter2", fakeToken} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the caller's error %q leaks %q", err, leak)
				}
			}
			v, err := r.GetMetricByName(t.Context(), obj, podsMetric("mine"), labels.Everything())
			if err != nil || v.Value.String() != "1" {
				t.Errorf("Ebbflow's own metric: %v %v", v, err)
			}
		})
	}
}

// TestDiscoveryKeepsLastGood: an upstream whose discovery fails keeps its
// last good list (its requests then fail as 503s, not 404s) and reads down.
func TestDiscoveryKeepsLastGood(t *testing.T) {
	up := newFakeUpstream(t)
	up.set(func(f *fakeUpstream) { f.external = []string{"e1"} })
	r := newTestRouter(t, ownOf(nil, nil), prometheus.NewRegistry(), up.config("k", GroupExternal))
	if v := testutil.ToFloat64(r.metrics.up.WithLabelValues("k", GroupExternal)); v != 1 {
		t.Fatalf("up = %v after a good discovery", v)
	}
	up.set(func(f *fakeUpstream) { f.mode = "garbage" })
	if err := r.upstreams[0].Discover(t.Context()); err == nil {
		t.Fatal("a garbage discovery succeeded")
	}
	if v := testutil.ToFloat64(r.metrics.up.WithLabelValues("k", GroupExternal)); v != 0 {
		t.Errorf("up = %v after a failed discovery, want 0", v)
	}
	if got := r.ListAllExternalMetrics(); len(got) != 1 || got[0].Metric != "e1" {
		t.Errorf("discovery after a failure %v, want the last good [e1]", got)
	}
	_, err := r.GetExternalMetric(t.Context(), "ns", labels.Everything(), provider.ExternalMetricInfo{Metric: "e1"})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("got %v, want 503", err)
	}
	if n := testutil.CollectAndCount(r.metrics.requests); n != 1 {
		t.Errorf("%d request series, want 1 (the unavailable one)", n)
	}
}
