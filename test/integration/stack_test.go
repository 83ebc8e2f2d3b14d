// Package integration runs ebbflow-adapter's real pieces — Prometheus client,
// discovery, provider and custom-metrics-apiserver's HTTP handlers — against a real
// Prometheus scraping a test exporter. Only the Kubernetes API server is absent:
// object names come from an in-memory lister (the informer-backed one is exercised by
// the end-to-end tests on a real cluster).
package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/test/adaptertest"
)

// stack is one adapter wired to a Prometheus.
type stack struct {
	rec     *recorder
	disc    *discovery.Discoverer
	lister  *objfake.Lister
	handler http.Handler
	server  *httptest.Server
}

// newStack builds the adapter's pieces as the server does, with the namespace-query
// threshold given.
func newStack(t *testing.T, promURL string, ruleFile []byte, threshold int) *stack {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set, err := rules.Parse(ruleFile, mapper)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	hc, err := prom.NewHTTPClient(promURL, nil, prom.VerbGET)
	if err != nil {
		t.Fatal(err)
	}
	guard := adaptertest.Guard(t, hc, prom.GuardOptions{MaxConcurrent: 4, Timeout: 10 * time.Second}, reg)
	rec := &recorder{Client: guard}
	disc, err := discovery.New(discovery.Options{Client: rec, Scope: discovery.MapperScope{Mapper: mapper}, MaxAge: 10 * time.Minute, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	disc.SetRules(set.Rules)
	lister := &objfake.Lister{}
	prov, err := provider.New(provider.Options{Prom: rec, Discovery: disc, Lister: lister, Mapper: mapper, NamespaceQueryThreshold: threshold, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{rec: rec, disc: disc, lister: lister, handler: apiHandler(t, prov)}
	s.server = httptest.NewServer(s.handler)
	t.Cleanup(s.server.Close)
	return s
}

// apiHandler serves prov through custom-metrics-apiserver's real handlers, with
// authentication and authorization left out (they need a kube-apiserver).
func apiHandler(t *testing.T, prov *provider.Provider) http.Handler {
	return adaptertest.MetricsHandler(t, prov)
}

// get fetches path from the stack's API and decodes a 200 answer into out; it
// returns the status code.
func (s *stack) get(t *testing.T, path string, out any) int {
	t.Helper()
	resp, err := http.Get(s.server.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("decode %s: %v\n%s", path, err, body)
		}
	}
	if resp.StatusCode != http.StatusOK && testing.Verbose() {
		t.Logf("GET %s -> %d %s", path, resp.StatusCode, body)
	}
	return resp.StatusCode
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func mustf(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}

func customInfo(metric string) cmprovider.CustomMetricInfo {
	return cmprovider.CustomMetricInfo{GroupResource: schema.GroupResource{Resource: "pods"}, Namespaced: true, Metric: metric}
}
