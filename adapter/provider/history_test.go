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
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/config"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/ruleset"
	"github.com/ebbflow/ebbflow/adapter/ruleset/rulesettest"
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
	mapper := config.DefaultRESTMapper()
	set, err := ruleset.Parse(rulesettest.Data(t, rulesettest.PodsAndQueue), mapper)
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
