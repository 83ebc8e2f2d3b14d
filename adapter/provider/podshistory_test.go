package provider

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

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
	var got []string
	for _, it := range list.Items {
		o := it.DescribedObject
		if o.Kind != "Deployment" || o.APIVersion != "apps/v1" || o.Name != "web" || o.Namespace != "ns" || it.Metric.Name != "http_requests_per_second" ||
			it.Metric.Selector == nil || it.Metric.Selector.MatchLabels["code"] != "200" || len(it.Metric.Selector.MatchLabels) != 1 {
			t.Errorf("item %+v", it)
		}
		got = append(got, fmt.Sprintf("%d=%s", it.Timestamp.Unix(), it.Value.String()))
	}
	if want := "0=3 600=5500m"; strings.Join(got, " ") != want {
		t.Fatalf("items %q, want %q", got, want)
	}
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
