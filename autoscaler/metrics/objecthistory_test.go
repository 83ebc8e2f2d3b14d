package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// objectHistoryAPI answers custom metrics requests with items, and records
// the requests (path and metricLabelSelector).
type objectHistoryAPI struct {
	mu       sync.Mutex
	items    []cmv1beta2.MetricValue
	status   int
	requests []string
}

func (a *objectHistoryAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, r.URL.Path+"?"+r.URL.Query().Get("metricLabelSelector"))
	if a.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d,"reason":"BadRequest","message":"history.ebbflow.dev/step: too short"}`, a.status)
		return
	}
	writeJSON(w, cmv1beta2.MetricValueList{
		TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"}, Items: a.items})
}

func objItem(sec int64, v string) cmv1beta2.MetricValue {
	return cmv1beta2.MetricValue{Metric: cmv1beta2.MetricIdentifier{Name: "hits"},
		Timestamp: metav1.NewTime(time.Unix(sec, 0)), Value: apiresource.MustParse(v)}
}

func newObjectHistoryREST(t *testing.T, api *objectHistoryAPI) *metrics.REST {
	t.Helper()
	client, err := metrics.NewObjectHistoryClient(serveAPI(t, api))
	if err != nil {
		t.Fatal(err)
	}
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, apimeta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, apimeta.RESTScopeNamespace)
	return metrics.NewREST(nil, nil, nil).WithObjectHistories(client, mapper)
}

func TestObjectHistory(t *testing.T) {
	api := &objectHistoryAPI{items: []cmv1beta2.MetricValue{
		// Out of order, two values at 600 s (summed), nothing at 1200 s.
		objItem(1500, "2"), objItem(600, "1"), objItem(600, "500m"), objItem(900, "3"),
	}}
	c := newObjectHistoryREST(t, api)
	req := metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute}
	sel := labels.SelectorFromSet(labels.Set{"code": "200"})
	ctx := context.Background()
	h, err := c.ObjectHistory(ctx, "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"}, sel, req)
	if err != nil {
		t.Fatalf("%v (requests %q)", err, api.requests)
	}
	if !h.Start.Equal(time.Unix(600, 0)) || h.Step != 5*time.Minute || fmt.Sprint(h.Values) != "[1.5 3 NaN 2]" {
		t.Fatalf("history %v at %v: %v", h.Start, h.Step, h.Values)
	}
	// Through the deduplicating client, a Deployment and a Namespace.
	d := metrics.NewDeduplicated(c, time.Minute, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	if _, err := d.ObjectHistory(ctx, "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, labels.Everything(), req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ObjectHistory(ctx, "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "other"}, labels.Everything(), req); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/services/api/hits?code=200,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m",
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/deployments.apps/web/hits?history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m",
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/metrics/hits?history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m",
	}
	if strings.Join(api.requests, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests\n%s\nwant\n%s", strings.Join(api.requests, "\n"), strings.Join(want, "\n"))
	}
}

func TestObjectHistoryErrors(t *testing.T) {
	ctx := context.Background()
	req := metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute}
	svc := autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"}
	if _, err := metrics.NewREST(nil, nil, nil).ObjectHistory(ctx, "ns", "hits", svc, labels.Everything(), req); err == nil || !strings.Contains(err.Error(), "no custom metrics REST client") {
		t.Errorf("without a REST client: %v", err)
	}
	api := &objectHistoryAPI{}
	c := newObjectHistoryREST(t, api)
	if _, err := c.ObjectHistory(ctx, "ns", "hits", svc, labels.Everything(), req); err != metrics.ErrNoHistory {
		t.Errorf("empty answer: %v", err)
	}
	if _, err := c.ObjectHistory(ctx, "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "x/v1", Kind: "Widget", Name: "w"}, labels.Everything(), req); err == nil || !strings.Contains(err.Error(), "unable to map kind") {
		t.Errorf("unknown kind: %v", err)
	}
	reserved := labels.SelectorFromSet(labels.Set{"history.ebbflow.dev/range": "1h"})
	if _, err := c.ObjectHistory(ctx, "ns", "hits", svc, reserved, req); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("reserved key in the metric selector: %v", err)
	}
	api.status = http.StatusBadRequest
	if _, err := c.ObjectHistory(ctx, "ns", "hits", svc, labels.Everything(), req); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("adapter's 400: %v", err)
	}
	if n := len(api.requests); n != 2 {
		t.Errorf("%d requests, want 2 (the empty answer and the 400)", n)
	}
}
