package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// historyAPI answers external metric requests with the items given for
// their label selector, and records the selectors.
type historyAPI struct {
	items     map[string][]externalmetricsv1beta1.ExternalMetricValue
	selectors []string
}

func (a *historyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/rps" {
		http.NotFound(w, r)
		return
	}
	sel := r.URL.Query().Get("labelSelector")
	a.selectors = append(a.selectors, sel)
	items, ok := a.items[sel]
	if !ok {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":400,"reason":"BadRequest","message":"bad"}`, http.StatusBadRequest)
		return
	}
	writeJSON(w, externalmetricsv1beta1.ExternalMetricValueList{
		TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: "external.metrics.k8s.io/v1beta1"}, Items: items})
}

func item(sec int64, v string, queue string) externalmetricsv1beta1.ExternalMetricValue {
	return externalmetricsv1beta1.ExternalMetricValue{MetricName: "rps", MetricLabels: map[string]string{"queue": queue},
		Timestamp: metav1.NewTime(time.Unix(sec, 0)), Value: apiresource.MustParse(v)}
}

// serveAPI serves api (a fake metrics API) until the test ends and returns
// a client config for it.
func serveAPI(t *testing.T, api http.Handler) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// writeJSON answers with body as JSON.
func writeJSON(w http.ResponseWriter, body any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func newHistoryREST(t *testing.T, api *historyAPI) *metrics.REST {
	t.Helper()
	external, err := externalclient.NewForConfig(serveAPI(t, api))
	if err != nil {
		t.Fatal(err)
	}
	return metrics.NewREST(nil, nil, external)
}

func TestExternalHistory(t *testing.T) {
	want := "app=web,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m"
	api := &historyAPI{items: map[string][]externalmetricsv1beta1.ExternalMetricValue{want: {
		// Two series summed per timestamp, out of order; nothing at 1200 s.
		item(1500, "2", "b"), item(600, "1", "a"), item(600, "500m", "b"), item(900, "3", "a"), item(1500, "1", "a"),
	}}}
	c := newHistoryREST(t, api)
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	h, err := c.ExternalHistory(context.Background(), "ns", "rps", sel, metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute})
	if err != nil {
		t.Fatalf("%v (selectors %q)", err, api.selectors)
	}
	if !h.Start.Equal(time.Unix(600, 0)) || h.Step != 5*time.Minute {
		t.Fatalf("history starts %v at %v", h.Start, h.Step)
	}
	got := fmt.Sprint(h.Values)
	if got != "[1.5 3 NaN 3]" {
		t.Fatalf("values %s, want [1.5 3 NaN 3]", got)
	}
	if sel.String() != "app=web" {
		t.Fatalf("caller's selector changed to %q", sel)
	}
	// Through the deduplicating client the app wires.
	d := metrics.NewDeduplicated(c, time.Minute, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	if h2, err := d.ExternalHistory(context.Background(), "ns", "rps", sel, metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute}); err != nil || fmt.Sprint(h2.Values) != got {
		t.Fatalf("deduplicated: %v %v", h2.Values, err)
	}
}

func TestExternalHistoryErrors(t *testing.T) {
	api := &historyAPI{items: map[string][]externalmetricsv1beta1.ExternalMetricValue{
		"history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m":  {},
		"history.ebbflow.dev/range=1d,history.ebbflow.dev/step=30s": {item(0, "1", "a"), item(400_000, "1", "a")},
	}}
	c := newHistoryREST(t, api)
	ctx := context.Background()
	if _, err := c.ExternalHistory(ctx, "ns", "rps", labels.Everything(), metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute}); err != metrics.ErrNoHistory {
		t.Errorf("empty answer: %v", err)
	}
	// An answer spanning more points than asked is refused, not allocated.
	if _, err := c.ExternalHistory(ctx, "ns", "rps", labels.Everything(), metrics.HistoryRequest{Range: 24 * time.Hour, Step: 30 * time.Second}); err == nil || !strings.Contains(err.Error(), "more than 11000 points") {
		t.Errorf("oversized answer: %v", err)
	}
	if _, err := c.ExternalHistory(ctx, "ns", "rps", labels.Everything(), metrics.HistoryRequest{Range: 2 * time.Hour, Step: time.Minute}); err == nil || !strings.Contains(err.Error(), "external metrics API") {
		t.Errorf("failed read: %v", err)
	}
	n := len(api.selectors)
	reserved := labels.SelectorFromSet(labels.Set{"history.ebbflow.dev/step": "1m"})
	for _, tc := range []struct {
		sel  labels.Selector
		req  metrics.HistoryRequest
		want string
	}{
		{reserved, metrics.HistoryRequest{Range: time.Hour, Step: time.Minute}, "reserved"},
		{labels.Nothing(), metrics.HistoryRequest{Range: time.Hour, Step: time.Minute}, "selects nothing"},
		{nil, metrics.HistoryRequest{Range: time.Minute, Step: time.Hour}, "at least one positive step"},
		{nil, metrics.HistoryRequest{Range: 30 * 24 * time.Hour, Step: time.Minute}, "more than 11000"},
	} {
		if _, err := c.ExternalHistory(ctx, "ns", "rps", tc.sel, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %+v: %v, want %q", tc.sel, tc.req, err, tc.want)
		}
	}
	if len(api.selectors) != n {
		t.Errorf("invalid requests were sent: %q", api.selectors[n:])
	}
}

func TestHistorySelectorValues(t *testing.T) {
	for req, want := range map[metrics.HistoryRequest]string{
		{Range: 4*24*time.Hour + time.Hour, Step: time.Minute}: "history.ebbflow.dev/range=4d1h,history.ebbflow.dev/step=1m",
		{Range: 4 * 7 * 24 * time.Hour, Step: 5 * time.Minute}: "history.ebbflow.dev/range=4w,history.ebbflow.dev/step=5m",
	} {
		sel, err := metrics.HistorySelector(nil, req)
		if err != nil || sel.String() != want {
			t.Errorf("%+v: %q %v, want %q", req, sel, err, want)
		}
	}
}
