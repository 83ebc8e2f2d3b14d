package provider

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
)

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
	var got []string
	for _, it := range list.Items {
		if it.DescribedObject.Name != "web-1" || it.DescribedObject.Kind != "Pod" || it.Metric.Name != "http_requests_per_second" {
			t.Errorf("item %+v", it)
		}
		got = append(got, fmt.Sprintf("%d=%s", it.Timestamp.Unix(), it.Value.String()))
	}
	if want := "0=1 600=2500m"; strings.Join(got, " ") != want {
		t.Fatalf("items %q, want %q", got, want)
	}
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
