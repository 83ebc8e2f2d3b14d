package server

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
)

// discoveryServer answers the discovery requests a RESTMapper makes with the core
// group's pods and namespaces, and nothing else: no object is ever listed.
func discoveryServer(t *testing.T) *httptest.Server {
	t.Helper()
	answers := map[string]any{
		"/api":  metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
		"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList"}, GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: metav1.Verbs{"get", "list", "watch"}},
		}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.URL.Path]
		if !ok {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConfigThenComplete: Config works on a copy of the options (defaults filled
// there), so the caller's options read as they were given; Complete builds the
// adapter without running any of it, and leaves the caller's options as they
// were too (custom-metrics-apiserver's builder in their Base unused, serving
// options applied from a copy).
func TestConfigThenComplete(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+discoveryServer(t).URL+`"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`)
	rules := filepath.Join(dir, "rules.yaml")
	writeFile(t, rules, string(rulestest.Data(t, rulestest.PodsAndQueue)))
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--config=" + rules, "--prometheus-url=http://127.0.0.1:9", "--lister-kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--authentication-skip-lookup", "--bind-address=127.0.0.1", "--cert-dir=" + dir, "--disable-http2",
	}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	o.Base.SecureServing.Listener, o.Base.SecureServing.BindPort = ln, ln.Addr().(*net.TCPAddr).Port
	before := *o
	before.PrometheusHeaders = slices.Clone(o.PrometheusHeaders)
	c, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxAge != 0 || !reflect.DeepEqual(*o, before) {
		t.Errorf("Config changed the caller's options (max age %v)", o.MaxAge)
	}
	if c.Options.MaxAge != o.RelistInterval {
		t.Errorf("config's max age = %v, want the relist interval %v", c.Options.MaxAge, o.RelistInterval)
	}
	if c.Rules == nil || len(c.Rules.Rules) != 2 || c.Registerer == nil || c.Mapper == nil {
		t.Errorf("config = %+v, want the rule set, a registerer and a mapper", c)
	}

	// Complete builds every piece and runs none: no discovery (Prometheus at
	// 127.0.0.1:9 would be asked), no cache filling (the discovery server fails
	// the test on any other request).
	c.Registerer = prometheus.NewRegistry()
	secureBefore := *o.Base.SecureServing.SecureServingOptions
	cc, err := c.Complete()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*o, before) || !reflect.DeepEqual(*o.Base.SecureServing.SecureServingOptions, secureBefore) {
		t.Errorf("Complete changed the caller's options or their serving options (HTTP/2 disabled %v, certificate %+v)",
			o.Base.SecureServing.DisableHTTP2Serving, o.Base.SecureServing.ServerCert.CertKey)
	}
	if o.Base.OpenAPIConfig != nil || o.Base.OpenAPIV3Config != nil || o.Base.CustomMetricsAdapterServerOptions.OpenAPIConfig != nil {
		t.Error("Complete set OpenAPI definitions in the caller's options")
	}
	base := reflect.ValueOf(o.Base).Elem()
	for _, cached := range []string{"clientConfig", "restMapper", "informers", "config", "server", "cmProvider", "emProvider"} {
		if !base.FieldByName(cached).IsNil() {
			t.Errorf("the caller's options hold a %s built by Config or Complete", cached)
		}
	}
	if cc.server == nil || cc.disc == nil || cc.reload == nil || cc.lister == nil || !cc.apis.Custom || !cc.apis.External || cc.resAPI != nil {
		t.Errorf("completed = %+v, want the server, discovery, reloader and lister, serving custom and external metrics", cc.completedConfig)
	}
	if cc.disc.Synced() || len(cc.disc.CustomMetrics()) != 0 {
		t.Error("discovery ran during Complete")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
