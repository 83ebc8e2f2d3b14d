package integration

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/test/adaptertest"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// objectHistoryRules serve http_hits per Service as a custom metric and the
// same series as a namespaced external metric.
const objectHistoryRules = `
rules:
- seriesQuery: 'http_hits{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      service: {resource: service}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'http_hits{namespace!="",service!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (service)'
`

// apiHits is the recorded http_hits of Service api (code 200) at minute i.
func apiHits(i int64) float64 { return float64(i%7) * 1.5 }

// backfillHits writes http_hits for Service api (codes 200 and 500) and
// Service other every minute from from to at, as TSDB blocks (promtool).
func backfillHits(t *testing.T, from, at time.Time, dataDir string) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("# TYPE http_hits gauge\n")
	for ts := from; !ts.After(at); ts = ts.Add(time.Minute) {
		m := ts.Unix() / 60
		fmt.Fprintf(&b, "http_hits{namespace=\"ns1\",service=\"api\",code=\"200\"} %g %d\n", apiHits(m), ts.Unix())
		fmt.Fprintf(&b, "http_hits{namespace=\"ns1\",service=\"api\",code=\"500\"} 1000 %d\n", ts.Unix())
		fmt.Fprintf(&b, "http_hits{namespace=\"ns1\",service=\"other\",code=\"200\"} 999 %d\n", ts.Unix())
	}
	b.WriteString("# EOF\n")
	file := writeFile(t, "hits.om", b.Bytes())
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package) not found: run hack/install-prometheus.sh: %v", err)
	}
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, dataDir).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
}

// newObjectHistoryStack is the adapter's provider over the guarded HTTP
// client behind custom-metrics-apiserver's handlers with ebbflow's filters
// and object-history handler (as the server installs them), and a
// metrics.REST over them as the autoscaler wires it. It returns the
// server's URL too.
func newObjectHistoryStack(t *testing.T, promURL string) (*metrics.REST, string) {
	t.Helper()
	prov, mapper := historyProvider(t, promURL, objectHistoryRules)
	srv := httptest.NewServer(adaptertest.MetricsHandler(t, prov))
	t.Cleanup(srv.Close)
	restCfg := &rest.Config{Host: srv.URL}
	external, err := externalclient.NewForConfig(restCfg)
	must(t, err)
	objects, err := metrics.NewObjectHistoryClient(restCfg)
	must(t, err)
	return metrics.NewREST(nil, nil, external).WithObjectHistories(objects, mapper), srv.URL
}

// TestObjectHistoryAgainstPrometheus backfills three hours of a per-Service
// metric into a real Prometheus and reads Service api's history through the
// adapter's handlers as the controller reads an Object metric's
// (custom.metrics.k8s.io, one object by name, with the reserved
// requirements): every recorded point is there with its value, the other
// Service's and the other code's series are not, and it equals point for
// point the external history of the same series. Lists and bad reserved
// requirements are refused with a 400 that says why.
func TestObjectHistoryAgainstPrometheus(t *testing.T) {
	at := time.Now().Add(-3 * time.Minute).Truncate(time.Minute)
	req := metrics.HistoryRequest{Range: 2 * time.Hour, Step: time.Minute}
	dir := t.TempDir()
	backfillHits(t, at.Add(-3*time.Hour), at, filepath.Join(dir, "data"))
	srv := promtest.Start(t, promtest.Options{Dir: dir})
	client, url := newObjectHistoryStack(t, srv.URL())
	ctx := ctxFor(t, time.Minute)

	api := autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "api"}
	code200 := labels.SelectorFromSet(labels.Set{"code": "200"})
	h, err := client.ObjectHistory(ctx, "ns1", "http_hits", api, code200, req)
	mustf(t, err == nil, "object history through the adapter: %v", err)
	mustf(t, h.Step == time.Minute && h.Start.Unix()%60 == 0, "history on a %v grid from %v", h.Step, h.Start)
	compared := 0
	for i, v := range h.Values {
		ts := h.Start.Add(time.Duration(i) * time.Minute)
		if ts.After(at) {
			break
		}
		mustf(t, v == apiHits(ts.Unix()/60), "at %s the history reads %g, recorded %g", ts, v, apiHits(ts.Unix()/60))
		compared++
	}
	mustf(t, compared >= 115, "only %d points compared (history of %d from %v)", compared, len(h.Values), h.Start)

	// The same series as an external metric: the same history.
	ext, err := client.ExternalHistory(ctx, "ns1", "http_hits", labels.SelectorFromSet(labels.Set{"service": "api", "code": "200"}), req)
	mustf(t, err == nil, "external history: %v", err)
	mustf(t, ext.Start.Equal(h.Start) && len(ext.Values) == len(h.Values), "external history %v×%d, object history %v×%d", ext.Start, len(ext.Values), h.Start, len(h.Values))
	for i := range h.Values {
		mustf(t, h.Values[i] == ext.Values[i] || (math.IsNaN(h.Values[i]) && math.IsNaN(ext.Values[i])), "point %d: object %g, external %g", i, h.Values[i], ext.Values[i])
	}
	// Without the code selector both codes are summed (1000 more each point).
	all, err := client.ObjectHistory(ctx, "ns1", "http_hits", api, labels.Everything(), req)
	mustf(t, err == nil && len(all.Values) > 0 && all.Values[0] == h.Values[0]+1000, "both codes: %v, %v", err, all.Values[:min(3, len(all.Values))])

	// Refusals, each a 400 that says why.
	_, err = client.ObjectHistory(ctx, "ns1", "http_hits", api, code200, metrics.HistoryRequest{Range: time.Hour, Step: 10 * time.Second})
	mustf(t, err != nil && strings.Contains(err.Error(), "history.ebbflow.dev/step") && strings.Contains(err.Error(), "shorter than 30s"), "step of 10s: %v", err)
	for _, path := range []string{
		"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/services/*/http_hits",
		"/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns1/services/*/http_hits",
	} {
		resp, err := http.Get(url + path + "?metricLabelSelector=history.ebbflow.dev%2Frange%3D1h,history.ebbflow.dev%2Fstep%3D1m")
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mustf(t, resp.StatusCode == http.StatusBadRequest && strings.Contains(string(body), "served for one object asked by name"), "%s: %d %s", path, resp.StatusCode, body)
	}
}
