package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	promfake "github.com/ebbflow/ebbflow/adapter/prom/fake"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

const customOnlyRules = `
rules:
- seriesQuery: '{__name__="http_requests_total",namespace!="",pod!=""}'
  resources: {template: "<<.Resource>>"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

func TestSelectAPIs(t *testing.T) {
	files := map[string]string{
		"no rules":      "",
		"only external": clusterQueue(t),
		"only custom":   customOnlyRules,
		"only resource": replaceWindow("2m"),
	}
	for name, file := range files {
		set, err := rules.Parse([]byte(file), rulefile.DefaultRESTMapper())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, mode := range apigroups.ResourceMetricsModes {
			t.Run(name+"/"+mode, func(t *testing.T) {
				got := apigroups.Select(mode, set)
				want := apigroups.Served{Custom: true, External: true}
				switch mode {
				case apigroups.ResourceMetricsEnabled:
					want.Resource = true
				case apigroups.ResourceMetricsAuto:
					want.Resource = name == "only resource"
				}
				if got != want {
					t.Errorf("apigroups.Select = %+v, want %+v", got, want)
				}
			})
		}
	}
}

// apiFixture is the adapter's aggregated API server, as Run assembles it, over
// fake Prometheus and fake caches, served through its handler chain.
type apiFixture struct {
	path    string
	disc    *discovery.Discoverer
	reload  *reloader
	handler http.Handler
	resProv *provider.ResourceProvider
}

func newAPIFixture(t *testing.T, mode, ruleFile string) *apiFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mapper := rulefile.DefaultRESTMapper()
	prom := &promfake.Client{QueryFunc: func(string) (model.Vector, error) {
		return model.Vector{{Metric: model.Metric{"namespace": "ns", "pod": "p", "queue": "a"}, Value: 1, Timestamp: model.Now()}}, nil
	}, SeriesByMatch: map[string][]promfake.Series{
		"queue_messages_ready": {{Name: "queue_messages_ready", Labels: map[string]string{"queue": "a"}}},
		`{__name__="http_requests_total",namespace!="",pod!=""}`: {{Name: "http_requests_total", Labels: map[string]string{"namespace": "ns", "pod": "p"}}},
	}}
	reg := prometheus.NewRegistry()
	f := &apiFixture{path: filepath.Join(t.TempDir(), "config.yaml")}
	f.write(t, ruleFile)
	set, err := rules.ParseFileWith(f.path, rules.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	if f.disc, err = discovery.New(discovery.Options{Client: prom, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	f.disc.SetRules(set.Rules)
	if err := f.disc.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	prov, err := provider.New(provider.Options{Prom: prom, Discovery: f.disc, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	apis := apigroups.Select(mode, set)
	var cm cmprovider.CustomMetricsProvider
	var em cmprovider.ExternalMetricsProvider
	if apis.Custom {
		cm = prov
	}
	if apis.External {
		em = prov
	}
	generic := genericapiserver.NewConfig(apiserver.Codecs)
	generic.LoopbackClientConfig = &rest.Config{}
	generic.ExternalAddress = "127.0.0.1:6443" // not served: requests go to the handler
	setOpenAPI(generic, "ebbflow-adapter-test", apis)
	srv, err := NewMetricsServer(generic, nil, "ebbflow-adapter-test", cm, em, prov)
	if err != nil {
		t.Fatal(err)
	}
	if f.reload, err = newReloader(f.path, set.Hash, rules.Options{Mapper: mapper}, f.disc, reg); err != nil {
		t.Fatal(err)
	}
	f.reload.resourceMode = mode
	if apis.Resource {
		if f.resProv, err = provider.NewResource(provider.ResourceOptions{Prom: prom, Registerer: reg}, set.Resource); err != nil {
			t.Fatal(err)
		}
		pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if err := pods.Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}); err != nil {
			t.Fatal(err)
		}
		res := &resourceAPI{
			provider:  f.resProv,
			pods:      cache.NewGenericLister(pods, schema.GroupResource{Resource: "pods"}),
			nodes:     informers.NewSharedInformerFactory(kubefake.NewSimpleClientset(), 0),
			podsReady: func() bool { return true },
		}
		if err := res.install(ctx, srv.GenericAPIServer, time.Second); err != nil {
			t.Fatal(err)
		}
		res.start(ctx)
		f.reload.resource = f.resProv
	}
	f.handler = srv.GenericAPIServer.Handler
	return f
}

// write replaces the rule file by rename, as a ConfigMap volume update does.
func (f *apiFixture) write(t *testing.T, s string) {
	t.Helper()
	if err := os.WriteFile(f.path+".tmp", []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.path+".tmp", f.path); err != nil {
		t.Fatal(err)
	}
}

// get returns the status code and the body of GET path.
func (f *apiFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// resources lists the resource names of an API group version's discovery document.
func (f *apiFixture) resources(t *testing.T, groupVersion string) (int, []string) {
	t.Helper()
	code, body := f.get(t, "/apis/"+groupVersion)
	if code != http.StatusOK {
		return code, nil
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("%s: %v: %s", groupVersion, err, body)
	}
	names := []string{}
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	return http.StatusOK, names
}

const (
	customV1beta1  = "custom.metrics.k8s.io/v1beta1"
	customV1beta2  = "custom.metrics.k8s.io/v1beta2"
	externalV1beta = "external.metrics.k8s.io/v1beta1"
	resourceV1beta = "metrics.k8s.io/v1beta1"
	resourceV1     = "metrics.k8s.io/v1"
	externalQueue  = "/apis/external.metrics.k8s.io/v1beta1/namespaces/ns/queue_messages_ready"
	customRequests = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns/pods/p/http_requests_total"
)

// TestGroupsServedWithoutRules: the custom and external groups are served (200, an
// empty resource list, NotFound for a metric) whichever kinds of rules the file has,
// so the APIServices the chart always registers are Available.
func TestGroupsServedWithoutRules(t *testing.T) {
	tests := []struct {
		name, rules              string
		customs, externals       int
		customCode, externalCode int
	}{
		{"no rules", "", 0, 0, http.StatusNotFound, http.StatusNotFound},
		{"only external", clusterQueue(t), 0, 1, http.StatusNotFound, http.StatusOK},
		{"only custom", customOnlyRules, 2, 0, http.StatusOK, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAPIFixture(t, apigroups.ResourceMetricsAuto, tt.rules)
			for gv, want := range map[string]int{customV1beta1: tt.customs, customV1beta2: tt.customs, externalV1beta: tt.externals} {
				code, names := f.resources(t, gv)
				if code != http.StatusOK || len(names) != want {
					t.Errorf("GET /apis/%s: %d, resources %v; want 200 and %d", gv, code, names, want)
				}
			}
			for _, gv := range []string{"custom.metrics.k8s.io", "external.metrics.k8s.io"} {
				if code, body := f.get(t, "/apis/"+gv); code != http.StatusOK {
					t.Errorf("GET /apis/%s: %d %s", gv, code, body)
				}
			}
			if code, body := f.get(t, customRequests); code != tt.customCode {
				t.Errorf("custom metric: %d, want %d: %s", code, tt.customCode, body)
			}
			if code, body := f.get(t, externalQueue); code != tt.externalCode {
				t.Errorf("external metric: %d, want %d: %s", code, tt.externalCode, body)
			}
			for _, gv := range []string{resourceV1, resourceV1beta} {
				if code, _ := f.resources(t, gv); code != http.StatusNotFound {
					t.Errorf("%s served without resourceRules in auto mode: %d", gv, code)
				}
			}
		})
	}
}

// TestReloadAddsFirstRuleOfAKind: a reload that adds the first external (then
// custom) rule makes that metric answer in the running server.
func TestReloadAddsFirstRuleOfAKind(t *testing.T) {
	f := newAPIFixture(t, apigroups.ResourceMetricsAuto, customOnlyRules)
	ctx := context.Background()
	if code, _ := f.get(t, externalQueue); code != http.StatusNotFound {
		t.Fatalf("external metric before reload: %d, want 404", code)
	}
	f.write(t, customOnlyRules+clusterQueue(t))
	if !f.reload.check(ctx) {
		t.Fatal("rule file with the first external rule not reloaded")
	}
	if code, names := f.resources(t, externalV1beta); code != http.StatusOK || len(names) != 1 {
		t.Errorf("external resources after reload: %d %v", code, names)
	}
	if code, body := f.get(t, externalQueue); code != http.StatusOK {
		t.Errorf("external metric after reload: %d %s", code, body)
	}

	f = newAPIFixture(t, apigroups.ResourceMetricsAuto, clusterQueue(t))
	f.write(t, clusterQueue(t)+customOnlyRules)
	if !f.reload.check(ctx) {
		t.Fatal("rule file with the first custom rule not reloaded")
	}
	if code, body := f.get(t, customRequests); code != http.StatusOK {
		t.Errorf("custom metric after reload: %d %s", code, body)
	}
}

// TestResourceMetricsModes: --resource-metrics decides whether metrics.k8s.io is
// served; enabled serves it without resourceRules (empty, NotFound) and takes them
// from a reload; auto asks for a restart when a reload adds them.
func TestResourceMetricsModes(t *testing.T) {
	ctx := context.Background()
	const podPath = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods/p"
	const listPath = "/apis/metrics.k8s.io/v1beta1/namespaces/ns/pods"

	t.Run("enabled without rules", func(t *testing.T) {
		f := newAPIFixture(t, apigroups.ResourceMetricsEnabled, clusterQueue(t))
		for _, gv := range []string{resourceV1, resourceV1beta} {
			if code, names := f.resources(t, gv); code != http.StatusOK || len(names) != 2 {
				t.Fatalf("GET /apis/%s: %d %v, want 200 with pods and nodes", gv, code, names)
			}
		}
		if code, body := f.get(t, listPath); code != http.StatusOK {
			t.Errorf("pod metrics list: %d %s", code, body)
		} else {
			var list struct{ Items []json.RawMessage }
			if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Items) != 0 {
				t.Errorf("pod metrics list without rules = %s (%v), want no items", body, err)
			}
		}
		if code, body := f.get(t, podPath); code != http.StatusNotFound {
			t.Errorf("pod metrics without rules: %d %s, want 404", code, body)
		}
		f.write(t, clusterQueue(t)+replaceWindow("2m"))
		if !f.reload.check(ctx) {
			t.Fatal("resourceRules not reloaded")
		}
		if testutil.ToFloat64(f.reload.restartRequired) != 0 {
			t.Error("restart required although metrics.k8s.io is served")
		}
	})
	t.Run("disabled with rules", func(t *testing.T) {
		f := newAPIFixture(t, apigroups.ResourceMetricsDisabled, clusterQueue(t)+replaceWindow("2m"))
		for _, gv := range []string{resourceV1, resourceV1beta} {
			if code, _ := f.resources(t, gv); code != http.StatusNotFound {
				t.Errorf("%s served with --resource-metrics=disabled: %d", gv, code)
			}
		}
		if code, _ := f.resources(t, externalV1beta); code != http.StatusOK {
			t.Errorf("external not served: %d", code)
		}
	})
	t.Run("auto with rules", func(t *testing.T) {
		f := newAPIFixture(t, apigroups.ResourceMetricsAuto, clusterQueue(t)+replaceWindow("2m"))
		for _, gv := range []string{resourceV1, resourceV1beta} {
			if code, names := f.resources(t, gv); code != http.StatusOK || len(names) != 2 {
				t.Errorf("GET /apis/%s: %d %v", gv, code, names)
			}
		}
	})
	t.Run("auto, reload adds rules", func(t *testing.T) {
		f := newAPIFixture(t, apigroups.ResourceMetricsAuto, clusterQueue(t))
		f.write(t, clusterQueue(t)+replaceWindow("2m"))
		if !f.reload.check(ctx) {
			t.Fatal("not reloaded")
		}
		if testutil.ToFloat64(f.reload.restartRequired) != 1 {
			t.Error("restart_required not set")
		}
		f.write(t, clusterQueue(t))
		if !f.reload.check(ctx) || testutil.ToFloat64(f.reload.restartRequired) != 0 {
			t.Error("restart_required not cleared when resourceRules are removed again")
		}
	})
	t.Run("disabled, reload adds rules", func(t *testing.T) {
		f := newAPIFixture(t, apigroups.ResourceMetricsDisabled, clusterQueue(t))
		f.write(t, clusterQueue(t)+replaceWindow("2m"))
		if !f.reload.check(ctx) || testutil.ToFloat64(f.reload.restartRequired) != 0 {
			t.Error("restart required for resourceRules that --resource-metrics=disabled ignores")
		}
	})
}
