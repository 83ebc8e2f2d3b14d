package upstream

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	"k8s.io/metrics/pkg/apis/external_metrics"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// fakeToken is the bearer token of Ebbflow's identity in these tests.
const fakeToken = "ebbflow-service-account-token"

// fakeUpstream is a metrics API server on loopback (TLS) whose answers a test
// sets: the metrics it lists, a value per request, or a failure mode.
type fakeUpstream struct {
	srv *httptest.Server
	mu  sync.Mutex
	// custom lists RESOURCE/METRIC names (namespaced), external metric names.
	custom, external []string
	// mode: "" answers, "hang" waits for the request's end, "garbage" answers
	// non-JSON, "error" a 500 with a message, "notfound" 404, "huge" more than
	// MaxResponseBytes, "forbidden" 403.
	mode string
	// paths are the request paths and queries seen; auth their Authorization.
	paths []string
	auth  []string
}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeUpstream) set(fn func(f *fakeUpstream)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// seen returns the request URIs seen.
func (f *fakeUpstream) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

// config is an upstream entry reaching f with its CA.
func (f *fakeUpstream) config(name string, groups ...string) Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	return Config{Name: name, URL: f.srv.URL, Groups: groups, CABundle: string(ca), Timeout: &metav1.Duration{Duration: time.Second}}
}

func (f *fakeUpstream) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	mode, custom, external := f.mode, f.custom, f.external
	q := r.URL.Query()
	q.Del("timeout")
	f.paths = append(f.paths, (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).RequestURI())
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch mode {
	case "hang":
		<-r.Context().Done()
		return
	case "garbage":
		_, _ = w.Write([]byte("<html>not a metrics server</html>"))
		return
	case "error":
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"query to https://secret.internal/prom?token=hunter2 failed","code":500}`, http.StatusInternalServerError)
		return
	case "forbidden":
		w.WriteHeader(http.StatusForbidden)
		return
	case "notfound":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		return
	case "huge":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"MetricValueList","apiVersion":"custom.metrics.k8s.io/v1beta2","items":[`))
		item := []byte(`{"describedObject":{"kind":"Pod","name":"p"},"metric":{"name":"m"},"value":"1"},`)
		for n := 0; n <= MaxResponseBytes/len(item); n++ {
			if _, err := w.Write(item); err != nil {
				return
			}
		}
		_, _ = w.Write(item[:len(item)-1])
		_, _ = w.Write([]byte("]}"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer(r, custom, external))
}

// answer is the fake's document for r: discovery, or one value per request
// whose value is 7 and whose label echoes the metric selector.
func answer(r *http.Request, custom, external []string) any {
	p := r.URL.Path
	switch p {
	case "/apis/" + GroupCustom + "/" + customVersion:
		return resourceList(GroupCustom+"/"+customVersion, custom)
	case "/apis/" + GroupExternal + "/" + externalVersion:
		return resourceList(GroupExternal+"/"+externalVersion, external)
	}
	parts := strings.Split(strings.TrimPrefix(p, "/apis/"), "/")
	metric := parts[len(parts)-1]
	if strings.HasPrefix(p, "/apis/"+GroupExternal) {
		return emv1beta1.ExternalMetricValueList{
			TypeMeta: metav1.TypeMeta{Kind: "ExternalMetricValueList", APIVersion: GroupExternal + "/" + externalVersion},
			Items: []emv1beta1.ExternalMetricValue{{
				MetricName: metric, MetricLabels: map[string]string{"selector": r.URL.Query().Get("labelSelector")},
				Value: resource.MustParse("7"),
			}},
		}
	}
	return cmv1beta2.MetricValueList{
		TypeMeta: metav1.TypeMeta{Kind: "MetricValueList", APIVersion: GroupCustom + "/" + customVersion},
		Items: []cmv1beta2.MetricValue{{
			DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: parts[len(parts)-2]},
			Metric:          cmv1beta2.MetricIdentifier{Name: metric},
			Value:           resource.MustParse("7"),
		}},
	}
}

func resourceList(gv string, names []string) metav1.APIResourceList {
	l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for _, n := range names {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: n, Namespaced: true, Kind: "MetricValueList", Verbs: []string{"get"}})
	}
	return l
}

// fakeOwn is Ebbflow's own provider: it serves the names it holds, value 1.
type fakeOwn struct {
	custom   map[provider.CustomMetricInfo]bool
	external map[string]bool
}

func podsMetric(name string) provider.CustomMetricInfo {
	return provider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: name}
}

func (o *fakeOwn) ServesCustom(info provider.CustomMetricInfo) bool { return o.custom[info] }
func (o *fakeOwn) ServesExternal(metric string) bool                { return o.external[metric] }

func (o *fakeOwn) GetMetricByName(_ context.Context, name types.NamespacedName, info provider.CustomMetricInfo, _ labels.Selector) (*custom_metrics.MetricValue, error) {
	if !o.custom[info] {
		return nil, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	return &custom_metrics.MetricValue{Metric: custom_metrics.MetricIdentifier{Name: info.Metric}, Value: resource.MustParse("1")}, nil
}

func (o *fakeOwn) GetMetricBySelector(ctx context.Context, namespace string, _ labels.Selector, info provider.CustomMetricInfo, sel labels.Selector) (*custom_metrics.MetricValueList, error) {
	v, err := o.GetMetricByName(ctx, types.NamespacedName{Namespace: namespace, Name: "x"}, info, sel)
	if err != nil {
		return nil, err
	}
	return &custom_metrics.MetricValueList{Items: []custom_metrics.MetricValue{*v}}, nil
}

func (o *fakeOwn) ListAllMetrics() []provider.CustomMetricInfo {
	var out []provider.CustomMetricInfo
	for info := range o.custom {
		out = append(out, info)
	}
	return out
}

func (o *fakeOwn) GetExternalMetric(_ context.Context, _ string, _ labels.Selector, info provider.ExternalMetricInfo) (*external_metrics.ExternalMetricValueList, error) {
	if !o.external[info.Metric] {
		return nil, provider.NewMetricNotFoundError(externalResource, info.Metric)
	}
	return &external_metrics.ExternalMetricValueList{Items: []external_metrics.ExternalMetricValue{{MetricName: info.Metric, Value: resource.MustParse("1")}}}, nil
}

func (o *fakeOwn) ListAllExternalMetrics() []provider.ExternalMetricInfo {
	var out []provider.ExternalMetricInfo
	for m := range o.external {
		out = append(out, provider.ExternalMetricInfo{Metric: m})
	}
	return out
}

// newTestRouter is a router with own in front of ups, discovered once; reg
// receives its self-metrics.
func newTestRouter(t *testing.T, own *fakeOwn, reg *prometheus.Registry, ups ...Config) *Router {
	t.Helper()
	r, err := New(Options{
		Upstreams: ups, Identity: &rest.Config{BearerToken: fakeToken},
		Custom: own, External: own, Served: own,
		Normalize:  func(i provider.CustomMetricInfo) (provider.CustomMetricInfo, error) { return i, nil },
		Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Discover(t.Context())
	return r
}
