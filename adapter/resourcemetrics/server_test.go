package resourcemetrics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/metrics/pkg/apis/metrics"

	"github.com/ebbflow/ebbflow/adapter/resourcemetrics/fake"
)

// fixture: pods a/web-0 (app=web), a/web-1 (app=web, two containers), a/db-0
// (app=db, no values), b/web-0 (app=web); nodes n1 (zone=x) and n2 (zone=y)
// with values, n3 without.
func fixtureGetter() *fake.Getter {
	ts := metav1.NewTime(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	win := metav1.Duration{Duration: time.Minute}
	usage := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	pod := func(ns, name string, containers ...metrics.ContainerMetrics) metrics.PodMetrics {
		return metrics.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}}, Timestamp: ts, Window: win, Containers: containers}
	}
	node := func(name, cpu, mem string) metrics.NodeMetrics {
		return metrics.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: name}, Timestamp: ts, Window: win, Usage: usage(cpu, mem)}
	}
	return &fake.Getter{
		Pods: map[string]metrics.PodMetrics{
			"a/web-0": pod("a", "web-0", metrics.ContainerMetrics{Name: "app", Usage: usage("250m", "64Mi")}),
			"a/web-1": pod("a", "web-1", metrics.ContainerMetrics{Name: "app", Usage: usage("500m", "96Mi")}, metrics.ContainerMetrics{Name: "sidecar", Usage: usage("125m", "32Mi")}),
			"b/web-0": pod("b", "web-0", metrics.ContainerMetrics{Name: "app", Usage: usage("1", "1Gi")}),
		},
		Nodes: map[string]metrics.NodeMetrics{"n1": node("n1", "1500m", "2Gi"), "n2": node("n2", "750m", "1Gi")},
	}
}

// newHandler serves metrics.k8s.io from g over the fixture's caches through
// the API server's real handlers (no authentication or authorization).
func newHandler(t *testing.T, g MetricsGetter) http.Handler {
	t.Helper()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range []struct{ ns, name, app string }{{"a", "web-0", "web"}, {"a", "web-1", "web"}, {"a", "db-0", "db"}, {"b", "web-0", "web"}} {
		if err := pods.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name, Labels: map[string]string{"app": p.app}}}); err != nil {
			t.Fatal(err)
		}
	}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []struct{ name, zone string }{{"n1", "x"}, {"n2", "y"}, {"n3", "x"}} {
		if err := nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"zone": n.zone}}}); err != nil {
			t.Fatal(err)
		}
	}
	scheme := NewScheme()
	cfg := genericapiserver.NewRecommendedConfig(codecs(scheme))
	cfg.LoopbackClientConfig = &rest.Config{}
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(GetOpenAPIDefinitions, namer)
	srv, err := cfg.Complete().New("resourcemetrics-test", genericapiserver.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	err = Install(srv, Options{
		Getter:  g,
		Pods:    cache.NewGenericLister(pods, schema.GroupResource{Resource: "pods"}),
		Nodes:   corev1listers.NewNodeLister(nodes),
		Timeout: 5 * time.Second,
		Logger:  klog.Background(),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.PrepareRun() // installs the OpenAPI documents
	return srv.Handler
}

// get returns the status code and body of GET path with the Accept header
// accept ("" for JSON).
func get(t *testing.T, h http.Handler, path, accept string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// getJSON is get decoding a JSON body.
func getJSON(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	code, body := get(t, h, path, "")
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET %s: %d %v: %s", path, code, err, body)
	}
	return code, out
}
