//go:build requestfiles

package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	objfake "github.com/ebbflow/ebbflow/adapter/objects/fake"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules/rulestest"
	"github.com/ebbflow/ebbflow/test/coverfiles"
)

// maxRequestFiles bounds the files of adapter/... one request runs through,
// Prometheus' HTTP client included: issue 30's goal, met (12 since the
// histories of each package, the filter's path parsing, the registry and
// the HTTP client's caps each sit in one file).
const maxRequestFiles = 12

// TestRequestFiles measures the files of adapter/... that one request runs
// through (issue 30 §3; docs/benchmarks.md "Adapter: request path"):
// TestRequestPath's, a history of a Pods metric for the pods of a namespace
// (*), from the HTTP handler to the Prometheus HTTP client. It counts the
// files with a block whose count grew from the subtest "built" alone to the
// whole test, fakes aside. It runs go test twice with -coverpkg, so it sits
// behind a build tag:
//
//	go test -tags requestfiles -count=1 -run '^TestRequestFiles$' -v ./adapter/server/
func TestRequestFiles(t *testing.T) {
	built := coverfiles.Counts(t, "requestfiles", "^TestRequestPath$/^built$", "github.com/ebbflow/ebbflow/adapter/...")
	whole := coverfiles.Counts(t, "requestfiles", "^TestRequestPath$", "github.com/ebbflow/ebbflow/adapter/...")
	files := coverfiles.Grown(built, whole, "/fake/")
	t.Logf("%d files run by one request:\n%s", len(files), strings.Join(files, "\n"))
	if len(files) > maxRequestFiles {
		t.Errorf("one request runs through %d files, want at most %d", len(files), maxRequestFiles)
	}
}

// TestRequestPath is the request TestRequestFiles measures: the adapter's
// metrics server as Complete builds it (NewMetricsServer, provider, discovery,
// the Guard in front of the Prometheus HTTP client) over a Prometheus that
// answers from memory; authentication and authorization are left out. The
// metric is discovered by the relist in "built"; "served" asks the history of
// the Deployment web's pods.
func TestRequestPath(t *testing.T) {
	promSrv := httptest.NewServer(http.HandlerFunc(fakePrometheus))
	t.Cleanup(promSrv.Close)
	var handler http.Handler
	t.Run("built", func(t *testing.T) { handler = requestPathHandler(t, promSrv.URL) })
	t.Run("served", func(t *testing.T) {
		if handler == nil {
			t.Fatal("not built")
		}
		sel := url.QueryEscape("history.ebbflow.dev/range=10m,history.ebbflow.dev/step=5m,history.ebbflow.dev/deployment-pods=web")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/*/http_requests_per_second?metricLabelSelector="+sel, nil))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, `"kind":"Deployment"`) || strings.Count(body, `"value":"2500m"`) != 3 {
			t.Fatalf("%d %s, want the Deployment web's 3 samples of 2.5", rec.Code, body)
		}
	})
}

func requestPathHandler(t *testing.T, promURL string) http.Handler {
	t.Helper()
	mapper := rulefile.DefaultRESTMapper()
	set := rulestest.Parse(t, rulestest.PodsAndQueue)
	reg := prometheus.NewRegistry()
	opts := prom.NewConnectionOptions(promURL)
	hc, err := opts.Client()
	if err != nil {
		t.Fatal(err)
	}
	guards, err := prom.NewGuardMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	guard := guards.Guard(hc, prom.GuardOptions{MaxConcurrent: 4, Timeout: 10 * time.Second}, rulefile.DefaultBackend)
	disc, err := discovery.New(discovery.Options{Client: guard, Scope: discovery.MapperScope{Mapper: mapper}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	disc.SetRules(set.Rules)
	if err := disc.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	prov, err := provider.New(provider.Options{Prom: guard, Discovery: disc, Lister: &objfake.Lister{}, Mapper: mapper, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	generic := genericapiserver.NewConfig(apiserver.Codecs)
	generic.LoopbackClientConfig = &rest.Config{}
	generic.ExternalAddress = "127.0.0.1:6443"
	srv, err := NewMetricsServer(generic, nil, "ebbflow-adapter-test", prov, prov, prov)
	if err != nil {
		t.Fatal(err)
	}
	return srv.GenericAPIServer.Handler
}

// fakePrometheus answers the relist with one series of http_requests_total
// and any query with a matrix of three samples of 2.5.
func fakePrometheus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/series":
		fmt.Fprint(w, `{"status":"success","data":[{"__name__":"http_requests_total","namespace":"shop","pod":"web-6d4cf56db6-x7k2p"}]}`)
	case "/api/v1/query":
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1700000000,"2.5"],[1700000300,"2.5"],[1700000600,"2.5"]]}]}}`)
	default:
		http.NotFound(w, r)
	}
}
