package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// podsHistoryAPI serves discovery and a Pods metric's history (the items
// of one workload), recording the requests.
type podsHistoryAPI struct {
	mu       sync.Mutex
	items    []cmv1beta2.MetricValue
	requests []string
}

func (a *podsHistoryAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body any
	switch r.URL.Path {
	case "/apis":
		body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList"}, Groups: []metav1.APIGroup{{
			Name:             "custom.metrics.k8s.io",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"},
		}}}
	case "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/qps":
		a.mu.Lock()
		a.requests = append(a.requests, r.URL.Query().Get("labelSelector")+" | "+r.URL.Query().Get("metricLabelSelector"))
		a.mu.Unlock()
		body = cmv1beta2.MetricValueList{TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"}, Items: a.items}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

func workloadItem(sec int64, v string) cmv1beta2.MetricValue {
	return cmv1beta2.MetricValue{DescribedObject: corev1.ObjectReference{Kind: "Deployment", APIVersion: "apps/v1", Name: "web"},
		Metric: cmv1beta2.MetricIdentifier{Name: "qps"}, Timestamp: metav1.NewTime(time.Unix(sec, 0)), Value: apiresource.MustParse(v)}
}

func newPodsHistoryREST(t *testing.T, api http.Handler) *metrics.REST {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL}
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, apimeta.RESTScopeNamespace)
	apis := customclient.NewAvailableAPIsGetter(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	return metrics.NewREST(nil, customclient.NewForConfig(cfg, mapper, apis), nil)
}

// A Pods metric's history is asked for the pods of the namespace with the
// scale's pod selector, the metric selector, the reserved requirements and
// the workload; the answer is summed per timestamp onto the grid.
func TestPodsHistory(t *testing.T) {
	api := &podsHistoryAPI{items: []cmv1beta2.MetricValue{workloadItem(1500, "2"), workloadItem(600, "1"), workloadItem(600, "500m"), workloadItem(900, "3")}}
	c := newPodsHistoryREST(t, api)
	req := metrics.HistoryRequest{Range: time.Hour, Step: 5 * time.Minute}
	web := metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: "web"}
	podSel := labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, r := range []metrics.PodsHistoryReader{c, metrics.NewDeduplicated(c, time.Minute, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))} {
		h, err := r.PodsHistory(context.Background(), "ns", "qps", web, podSel, labels.SelectorFromSet(labels.Set{"code": "200"}), req)
		if err != nil {
			t.Fatalf("%v (requests %q)", err, api.requests)
		}
		if !h.Start.Equal(time.Unix(600, 0)) || h.Step != 5*time.Minute || fmt.Sprint(h.Values) != "[1.5 3 NaN 2]" {
			t.Fatalf("history %v at %v: %v", h.Start, h.Step, h.Values)
		}
	}
	want := "app=web | code=200,history.ebbflow.dev/deployment-pods=web,history.ebbflow.dev/range=1h,history.ebbflow.dev/step=5m"
	if len(api.requests) != 2 || api.requests[0] != want || api.requests[1] != want {
		t.Fatalf("requests %q, want %q twice", api.requests, want)
	}
	api.items = nil
	if _, err := c.PodsHistory(context.Background(), "ns", "qps", web, podSel, nil, req); err == nil {
		t.Fatal("empty answer accepted")
	}
}

// The workload must be one the adapter can ask for: a known key, a name
// that is a label value; the metric selector may not hold a reserved key.
func TestPodsHistorySelector(t *testing.T) {
	req := metrics.HistoryRequest{Range: time.Hour, Step: time.Minute}
	for name, tc := range map[string]struct {
		sel labels.Selector
		w   metrics.WorkloadPods
	}{
		"unknown key":   {nil, metrics.WorkloadPods{Key: "history.ebbflow.dev/daemonset-pods", Name: "web"}},
		"long name":     {nil, metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: strings.Repeat("a", 64)}},
		"reserved key":  {labels.SelectorFromSet(labels.Set{metrics.HistoryReplicaSetPodsLabel: "db"}), metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel, Name: "web"}},
		"empty name":    {nil, metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel}},
		"selects none":  {labels.Nothing(), metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel, Name: "web"}},
		"zero workload": {nil, metrics.WorkloadPods{}},
	} {
		if sel, err := metrics.PodsHistorySelector(tc.sel, tc.w, req); err == nil {
			t.Errorf("%s: accepted as %v", name, sel)
		}
	}
	sel, err := metrics.PodsHistorySelector(nil, metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: "db.v2"}, req)
	if err != nil || sel.String() != "history.ebbflow.dev/range=1h,history.ebbflow.dev/statefulset-pods=db.v2,history.ebbflow.dev/step=1m" {
		t.Fatalf("selector %v, %v", sel, err)
	}
}
