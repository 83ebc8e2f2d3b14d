package provider

import (
	"context"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// matrixClient is the fake client that also answers range-vector queries.
type matrixClient struct {
	*promfake.Client
	mu      sync.Mutex
	answers map[string]model.Matrix
	asked   []string
}

func (c *matrixClient) QueryMatrix(_ context.Context, q string) (model.Matrix, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, q)
	if m, ok := c.answers[q]; ok {
		return m, nil
	}
	return nil, fmt.Errorf("fake: no matrix for %q", q)
}

func newHistoryProvider(t testing.TB) (*Provider, *matrixClient) {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse(rulestest.Data(t, rulestest.PodsAndQueue), mapper)
	if err != nil {
		t.Fatal(err)
	}
	mc := &matrixClient{Client: &promfake.Client{SeriesByMatch: map[string][]promfake.Series{
		`{__name__="queue_messages_ready",namespace!=""}`: {{Name: "queue_messages_ready", Labels: map[string]string{"namespace": "ns", "queue": "q"}}},
	}}, answers: map[string]model.Matrix{}}
	d, err := discovery.New(discovery.Options{Client: mc, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	d.SetRules(set.Rules)
	if err := d.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Prom: mc, Discovery: d, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	return p, mc
}

func historySel(t *testing.T, s string) labels.Selector { return historySelB(t, s) }

func historySelB(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// stream is a series of metric with vals five minutes apart from 0.
func stream(metric model.Metric, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: metric}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(int64(i) * 300_000), Value: model.SampleValue(v)})
	}
	return s
}

// checkHistoryRefusals checks what every history request refuses, sent
// through ask (a metric selector) to a provider over mc: bad reserved
// requirements (and those of extra) are a 400 naming them, before
// Prometheus is asked; an answer to oversized (the query of a day at 1m
// steps) holding more than rules.MaxHistorySamples samples, in series
// labelled by series, is a 400; a failing Prometheus a generic 500.
func checkHistoryRefusals(t *testing.T, mc *matrixClient, ask func(sel string) error, oversized string, series func(i int) model.Metric, extra map[string]string) {
	t.Helper()
	bad := map[string]string{
		"history.ebbflow.dev/range=7d":                                                     "needs both",
		"history.ebbflow.dev/range=7d,history.ebbflow.dev/step=5s":                         "history.ebbflow.dev/step",
		"history.ebbflow.dev/range=60d,history.ebbflow.dev/step=1h":                        "history.ebbflow.dev/range",
		"history.ebbflow.dev/range=7d,history.ebbflow.dev/step=5m,history.ebbflow.dev/x=1": "history.ebbflow.dev/x",
	}
	maps.Copy(bad, extra)
	for sel, want := range bad {
		if err := ask(sel); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a 400 naming %q", sel, err, want)
		}
	}
	if len(mc.asked) != 0 {
		t.Fatalf("Prometheus asked %q for invalid requests", mc.asked)
	}
	// Too many samples: a 400, not an answer of unbounded size.
	var m model.Matrix
	for s := 0; s <= rules.MaxHistorySamples/1441; s++ {
		m = append(m, &model.SampleStream{Metric: series(s), Values: make([]model.SamplePair, 1441)})
	}
	mc.answers[oversized] = m
	if err := ask("history.ebbflow.dev/range=1d,history.ebbflow.dev/step=1m"); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "narrow the metric selector") {
		t.Fatalf("oversized history: %v", err)
	}
	if err := ask("history.ebbflow.dev/range=2d,history.ebbflow.dev/step=1m"); !apierrors.IsInternalError(err) || strings.Contains(err.Error(), "fake") {
		t.Fatalf("failing Prometheus: %v", err)
	}
}

func TestExternalHistory(t *testing.T) {
	p, mc := newHistoryProvider(t)
	q := `(sum by (queue) (queue_messages_ready{namespace="ns",queue="orders"}))[1h:5m]`
	mc.answers[q] = model.Matrix{stream(model.Metric{"__name__": "x", "queue": "orders"}, 1, 2.5, math.Inf(1), 4)}
	sel := historySel(t, "queue=orders,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m")
	list, err := p.GetExternalMetric(context.Background(), "ns", sel, provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
	if err != nil {
		t.Fatalf("%v (asked %q)", err, mc.asked)
	}
	if len(mc.Queries()) != 0 {
		t.Errorf("instant vector queries sent: %q", mc.Queries())
	}
	var got []string
	for _, it := range list.Items {
		if it.MetricName != "queue_messages_ready" || it.MetricLabels["queue"] != "orders" || it.MetricLabels["__name__"] != "" {
			t.Errorf("item %+v", it)
		}
		got = append(got, fmt.Sprintf("%d=%s", it.Timestamp.Unix(), it.Value.String()))
	}
	// The infinity is not served; every other sample keeps its timestamp.
	if want := "0=1 300=2500m 900=4"; strings.Join(got, " ") != want {
		t.Fatalf("items %q, want %q", got, want)
	}
}

func TestExternalHistoryErrors(t *testing.T) {
	p, mc := newHistoryProvider(t)
	ask := func(s string) error {
		_, err := p.GetExternalMetric(context.Background(), "ns", historySel(t, s), provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
		return err
	}
	checkHistoryRefusals(t, mc, ask, `(sum by (queue) (queue_messages_ready{namespace="ns"}))[1d:1m]`,
		func(i int) model.Metric { return model.Metric{"queue": model.LabelValue(fmt.Sprint(i))} },
		map[string]string{"history.ebbflow.dev/range!=7d,history.ebbflow.dev/step=5m": "history.ebbflow.dev/range"})
}

func TestExternalHistoryNeedsMatrixClient(t *testing.T) {
	f := newFixture(t, 0)
	sel := historySel(t, "history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m")
	_, err := f.provider.GetExternalMetric(context.Background(), "ns", sel, provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
	if !apierrors.IsInternalError(err) {
		t.Fatalf("client without range-vector queries: %v", err)
	}
	if q := f.prom.Queries(); len(q) != 0 {
		t.Fatalf("history sent as an instant vector query: %q", q)
	}
}

var podRate = provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: "http_requests_per_second"}

func newObjectHistoryProvider(t *testing.T) (*Provider, *matrixClient) {
	t.Helper()
	p, mc := newHistoryProvider(t)
	mc.SeriesByMatch[`{__name__="http_requests_total",namespace!="",pod!=""}`] = []promfake.Series{
		{Name: "http_requests_total", Labels: map[string]string{"namespace": "ns", "pod": "web-1"}},
	}
	if err := p.opts.Discovery.(interface{ Relist(context.Context) error }).Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p, mc
}

func podStream(pod string, vals ...float64) *model.SampleStream {
	return stream(model.Metric{"pod": model.LabelValue(pod)}, vals...)
}

// historyItems checks the items of a custom metric's history: each one whose
// fields are not what ok expects is an error; their points, "unix=value" in
// order, must be want.
func historyItems(t *testing.T, list *custom_metrics.MetricValueList, want string, ok func(custom_metrics.MetricValue) bool) {
	t.Helper()
	var got []string
	for _, it := range list.Items {
		if !ok(it) {
			t.Errorf("item %+v", it)
		}
		got = append(got, fmt.Sprintf("%d=%s", it.Timestamp.Unix(), it.Value.String()))
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("items %q, want %q", got, want)
	}
}

// One object's history: its series only, one item per usable sample with
// the sample's timestamp and the object described.
func TestObjectHistory(t *testing.T) {
	p, mc := newObjectHistoryProvider(t)
	q := `(sum by (pod) (rate(http_requests_total{namespace="ns",pod="web-1"}[2m])))[1h:5m]`
	mc.answers[q] = model.Matrix{podStream("web-1", 1, math.Inf(1), 2.5), podStream("web-2", 9, 9, 9)}
	sel := historySel(t, "history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m")
	list, err := p.ObjectHistory(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web-1"}, podRate, sel)
	if err != nil {
		t.Fatalf("%v (asked %q)", err, mc.asked)
	}
	historyItems(t, list, "0=1 600=2500m", func(it custom_metrics.MetricValue) bool {
		return it.DescribedObject.Name == "web-1" && it.DescribedObject.Kind == "Pod" && it.Metric.Name == "http_requests_per_second"
	})
	if len(mc.Queries()) != 0 {
		t.Errorf("instant vector queries sent: %q", mc.Queries())
	}
}

// Hostile selector values stay inside their string; bad reserved
// requirements are a 400 naming them before Prometheus is asked; an
// oversized answer is a 400; a failing Prometheus a generic 500; no
// sample a 404.
func TestObjectHistoryErrors(t *testing.T) {
	p, mc := newObjectHistoryProvider(t)
	ask := func(name, s string) error {
		_, err := p.ObjectHistory(context.Background(), types.NamespacedName{Namespace: "ns", Name: name}, podRate, historySel(t, s))
		return err
	}
	checkHistoryRefusals(t, mc, func(sel string) error { return ask("web-1", sel) }, `(sum by (pod) (rate(http_requests_total{namespace="ns",pod="web-1"}[2m])))[1d:1m]`,
		func(i int) model.Metric { return model.Metric{"pod": "web-1", "code": model.LabelValue(fmt.Sprint(i))} }, nil)
	// The rest of the selector goes through the usual matchers, the range
	// applies to the whole rendered query.
	before := len(mc.asked)
	_ = ask("web-1", `code in (5xx,4xx),history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m`)
	if asked := mc.asked[before:]; len(asked) != 1 || !strings.Contains(asked[0], `code=~"4xx|5xx"`) || !strings.HasPrefix(asked[0], "(sum by (pod)") || !strings.HasSuffix(asked[0], ")))[1h:5m]") {
		t.Fatalf("hostile value rendered as %q", asked)
	}
	mc.answers[`(sum by (pod) (rate(http_requests_total{namespace="ns",pod="web-3"}[2m])))[1h:5m]`] = model.Matrix{podStream("web-2", 1)}
	if err := ask("web-3", "history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m"); !apierrors.IsNotFound(err) {
		t.Fatalf("object without samples: %v", err)
	}
}

// Requests that cannot answer a history say why, not the generic
// bad-selector message.
func TestCustomListsRefuseHistory(t *testing.T) {
	p, mc := newObjectHistoryProvider(t)
	sel := historySel(t, "history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m")
	_, err := p.GetMetricBySelector(context.Background(), "ns", historySel(t, "app=web"), podRate, sel)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "served for one object asked by name") || !strings.Contains(err.Error(), "label selector") {
		t.Errorf("list with a history: %v", err)
	}
	_, err = p.GetMetricByName(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web-1"}, podRate, historySel(t, "history.ebbflow.dev/range=7d"))
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "one object asked by name") || !strings.Contains(err.Error(), "needs both") {
		t.Errorf("single value with a history: %v", err)
	}
	if len(mc.asked)+len(mc.Queries()) != 0 {
		t.Errorf("Prometheus asked %q %q", mc.asked, mc.Queries())
	}
}

// podsHistoryQuery is the query of the Deployment web's history of
// http_requests_per_second over range:step, with code=200 when coded.
func podsHistoryQuery(rangeStep string, coded bool) string {
	code := ""
	if coded {
		code = `code="200",`
	}
	return `(sum(sum by (pod) (rate(http_requests_total{` + code + `namespace="ns",pod=~"web-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}"}[2m]))))` + rangeStep
}

// A Pods metric's history: the workload's total per point, one item per
// usable sample describing the workload; today's pods are not listed.
func TestPodsHistory(t *testing.T) {
	p, mc := newObjectHistoryProvider(t)
	mc.answers[podsHistoryQuery("[1h:5m]", true)] = model.Matrix{stream(model.Metric{}, 3, math.Inf(1), 5.5)}
	sel := historySel(t, "code=200,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m,history.ebbflow.dev/deployment-pods=web")
	list, err := p.GetMetricBySelector(context.Background(), "ns", historySel(t, "app=web"), podRate, sel)
	if err != nil {
		t.Fatalf("%v (asked %q)", err, mc.asked)
	}
	historyItems(t, list, "0=3 600=5500m", func(it custom_metrics.MetricValue) bool {
		o := it.DescribedObject
		return o.Kind == "Deployment" && o.APIVersion == "apps/v1" && o.Name == "web" && o.Namespace == "ns" && it.Metric.Name == "http_requests_per_second" &&
			it.Metric.Selector != nil && it.Metric.Selector.MatchLabels["code"] == "200" && len(it.Metric.Selector.MatchLabels) == 1
	})
	if len(mc.Queries()) != 0 {
		t.Errorf("instant vector queries sent: %q", mc.Queries())
	}
}

// Bad requests are a 400 naming the requirement before Prometheus is
// asked; a failing Prometheus a generic 500; no sample a 404; the other
// histories refuse a workload.
func TestPodsHistoryErrors(t *testing.T) {
	p, mc := newObjectHistoryProvider(t)
	const hist = "history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m,"
	list := func(s string) error {
		_, err := p.GetMetricBySelector(context.Background(), "ns", historySel(t, "app=web"), podRate, historySel(t, s))
		return err
	}
	for sel, want := range map[string]string{
		hist + "history.ebbflow.dev/deployment-pods=Web":                                        "history.ebbflow.dev/deployment-pods",
		hist + "history.ebbflow.dev/deployment-pods!=web":                                       "history.ebbflow.dev/deployment-pods",
		hist + "history.ebbflow.dev/deployment-pods=web,history.ebbflow.dev/replicaset-pods=db": "names one workload",
		hist + "history.ebbflow.dev/daemonset-pods=web":                                         "history.ebbflow.dev/daemonset-pods",
		"history.ebbflow.dev/deployment-pods=web":                                               "needs both",
		"history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m":                              "history.ebbflow.dev/deployment-pods",
		hist + "history.ebbflow.dev/statefulset-pods=web,code>1":                                "",
	} {
		if err := list(sel); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a 400 naming %q", sel, err, want)
		}
	}
	if len(mc.asked) != 0 {
		t.Fatalf("Prometheus asked %q for invalid requests", mc.asked)
	}
	// One object's history and an external metric's name no workload.
	if _, err := p.ObjectHistory(context.Background(), types.NamespacedName{Namespace: "ns", Name: "web-1"}, podRate,
		historySel(t, hist+"history.ebbflow.dev/deployment-pods=web")); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "only a Pods metric's history") {
		t.Errorf("object history with a workload: %v", err)
	}
	if _, err := p.GetExternalMetric(context.Background(), "ns", historySel(t, hist+"history.ebbflow.dev/deployment-pods=web"),
		provider.ExternalMetricInfo{Metric: "queue_messages_ready"}); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "only a Pods metric's history") {
		t.Errorf("external history with a workload: %v", err)
	}
	if len(mc.asked) != 0 {
		t.Fatalf("Prometheus asked %q for invalid requests", mc.asked)
	}
	if err := list(hist + "history.ebbflow.dev/deployment-pods=web"); !apierrors.IsInternalError(err) || strings.Contains(err.Error(), "fake") {
		t.Fatalf("failing Prometheus: %v", err)
	}
	mc.answers[podsHistoryQuery("[1h:5m]", false)] = model.Matrix{}
	if err := list(hist + "history.ebbflow.dev/deployment-pods=web"); !apierrors.IsNotFound(err) {
		t.Fatalf("history without samples: %v", err)
	}
}
