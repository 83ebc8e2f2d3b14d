package metrics_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// metricsAPI serves discovery and the custom and external metrics APIs the
// way an aggregated adapter does, and records the request paths and queries.
type metricsAPI struct {
	mu       sync.Mutex
	requests []string
}

func (a *metricsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests = append(a.requests, r.URL.Path+"?"+r.URL.RawQuery)
	a.mu.Unlock()
	ts := metav1.NewTime(time.Unix(7000, 0))
	var body any
	switch r.URL.Path {
	case "/api":
		body = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
	case "/apis":
		body = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList"}, Groups: []metav1.APIGroup{{
			Name:             "custom.metrics.k8s.io",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "custom.metrics.k8s.io/v1beta2", Version: "v1beta2"},
		}}}
	case "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/qps":
		win := int64(30)
		body = custommetricsv1beta2.MetricValueList{TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"}, Items: []custommetricsv1beta2.MetricValue{
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-a"}, Metric: custommetricsv1beta2.MetricIdentifier{Name: "qps"}, Timestamp: ts, WindowSeconds: &win, Value: apiresource.MustParse("1500m")},
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-b"}, Metric: custommetricsv1beta2.MetricIdentifier{Name: "qps"}, Timestamp: ts, Value: apiresource.MustParse("2")},
		}}
	case "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/services/api/hits":
		body = custommetricsv1beta2.MetricValueList{TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: "custom.metrics.k8s.io/v1beta2"}, Items: []custommetricsv1beta2.MetricValue{
			{DescribedObject: corev1.ObjectReference{Kind: "Service", Name: "api"}, Metric: custommetricsv1beta2.MetricIdentifier{Name: "hits"}, Timestamp: ts, Value: apiresource.MustParse("42")},
		}}
	case "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/depth":
		body = externalmetricsv1beta1.ExternalMetricValueList{TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: "external.metrics.k8s.io/v1beta1"}, Items: []externalmetricsv1beta1.ExternalMetricValue{
			{MetricName: "depth", Timestamp: ts, Value: apiresource.MustParse("3")},
			{MetricName: "depth", Timestamp: ts, Value: apiresource.MustParse("250m")},
		}}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// The REST client wired as the app wires it (discovery-chosen custom
// metrics version, a RESTMapper for kinds) asks the questions upstream asks.
func TestRESTOverHTTP(t *testing.T) {
	api := &metricsAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, apimeta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, apimeta.RESTScopeNamespace)
	apis := customclient.NewAvailableAPIsGetter(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	external, err := externalclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := metrics.NewREST(nil, customclient.NewForConfig(cfg, mapper, apis), external)
	ctx := context.Background()
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})

	samples, _, err := c.PodMetric(ctx, "ns", "qps", sel, labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if a, b := samples["web-a"], samples["web-b"]; len(samples) != 2 || a.Value != 1500 || a.Window != 30*time.Second || b.Value != 2000 || b.Window != time.Minute {
		t.Errorf("pod samples = %+v", samples)
	}
	v, _, err := c.ObjectMetric(ctx, "ns", "hits", autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"}, labels.Everything())
	if err != nil || v != 42000 {
		t.Errorf("object metric = %d, %v", v, err)
	}
	values, _, err := c.ExternalMetric(ctx, "ns", "depth", labels.SelectorFromSet(labels.Set{"queue": "a"}))
	if err != nil || len(values) != 2 || values[0] != 3000 || values[1] != 250 {
		t.Errorf("external values = %v, %v", values, err)
	}
	wantQueries := map[string]bool{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/*/qps?labelSelector=app%3Dweb": false,
		"/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/depth?labelSelector=queue%3Da":    false,
	}
	api.mu.Lock()
	for _, r := range api.requests {
		if _, ok := wantQueries[r]; ok {
			wantQueries[r] = true
		}
	}
	api.mu.Unlock()
	for q, seen := range wantQueries {
		if !seen {
			t.Errorf("request %s not made; made %v", q, api.requests)
		}
	}
}
