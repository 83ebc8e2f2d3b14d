package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/poll"
)

const (
	ownPath      = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + fixtureNamespace + "/pods/web-1/" + InflightGauge
	theirsPath   = "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + fixtureNamespace + "/pods/web-1/pa_inflight"
	externalPath = "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + fixtureNamespace + "/pa_queue_messages_ready"
	upstreamName = "prometheus-adapter"
)

// TestUpstreamPrometheusAdapter runs a real prometheus-adapter v0.12.0 as an
// upstream of ebbflow-adapter: what only it serves is forwarded (with
// ebbflow-adapter's own identity, authorized by the shipped RBAC alone), what
// both serve Ebbflow answers, discovery is the union, a caller without access
// to a group gets nothing, and once the upstream is killed under load its
// metrics fail fast as 503s naming it while Ebbflow's own keep answering.
func TestUpstreamPrometheusAdapter(t *testing.T) {
	up := startUpstreamPrometheusAdapter(t)
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	cfg := fmt.Sprintf("upstreams:\n- name: %s\n  url: %s\n  groups: [custom.metrics.k8s.io, external.metrics.k8s.io]\n  caFile: %s\n  timeout: 2s\n", upstreamName, up.url, up.caFile())
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	restartAdapterWith(t, "--upstreams-file="+file)
	admin := env().Client()
	want := promValue(t, fmt.Sprintf(`sum(%s{namespace=%q,pod="web-1"})`, InflightGauge, fixtureNamespace), time.Now())

	// The shipped component's RBAC is what the upstream's delegated
	// authorization needs: without it the upstream refuses ebbflow-adapter.
	poll.Until(t, 60*time.Second, "pa_inflight listed and refused without the upstreams RBAC", func() error {
		code, body, _ := rawGet(t.Context(), admin, theirsPath)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `upstream \"`+upstreamName+`\" unavailable`) {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	applyUpstreamsRBAC(t)
	poll.Until(t, 60*time.Second, "pa_inflight forwarded once the RBAC is applied", func() error {
		code, body, _ := rawGet(t.Context(), admin, theirsPath)
		if v, ok := firstValue(body); code != http.StatusOK || !ok || v != 1000*want {
			return fmt.Errorf("%d %s, want %v", code, body, 1000*want)
		}
		return nil
	})
	checkUpstreamAnswers(t, admin, want)
	checkUpstreamCallers(t)
	checkUpstreamKilled(t, up, admin, want)
}

// restartAdapterWith restarts ebbflow-adapter with args, and without them at
// the end of the test.
func restartAdapterWith(t *testing.T, args ...string) {
	t.Helper()
	env().SetAdapterArgs(args)
	t.Cleanup(func() {
		env().SetAdapterArgs(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env().RestartAdapter(ctx); err != nil {
			t.Errorf("restart adapter: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := env().RestartAdapter(ctx); err != nil {
		t.Fatalf("restart adapter: %v\n%s", err, env().LogTail(cluster.Adapter, 40))
	}
}

// checkUpstreamAnswers: the conflict goes to Ebbflow (and says so), an
// external metric is forwarded with its selector, discovery lists each name
// once.
func checkUpstreamAnswers(t *testing.T, admin kubernetes.Interface, want float64) {
	code, body, _ := rawGet(t.Context(), admin, ownPath)
	if v, ok := firstValue(body); code != http.StatusOK || !ok || v != want {
		t.Errorf("%s (served by both): %d %s, want Ebbflow's own %v", InflightGauge, code, body, want)
	}
	if !strings.Contains(env().LogTail(cluster.Adapter, 400), "Warning: metrics an upstream lists are served by Ebbflow's own rules") {
		t.Errorf("no conflict warning in the adapter's log")
	}
	var ext []byte
	poll.Until(t, 30*time.Second, "pa_queue_messages_ready forwarded", func() error {
		var code int
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ext, _ = admin.Discovery().RESTClient().Get().AbsPath(externalPath).Param("labelSelector", "queue=e2e-orders").Do(ctx).StatusCode(&code).Raw()
		if v, ok := firstValue(ext); code != http.StatusOK || !ok || v != 42000 {
			return fmt.Errorf("%d %s, want 42000", code, ext)
		}
		return nil
	})
	names, err := discovered("custom.metrics.k8s.io/v1beta2")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	for _, n := range []string{"pods/" + InflightGauge, "pods/pa_inflight", "pods/" + RequestsMetric} {
		if count[n] != 1 {
			t.Errorf("discovery lists %s %d times, want once: %v", n, count[n], names)
		}
	}
}

// checkUpstreamCallers: kube-apiserver authorizes the caller before Ebbflow
// forwards anything; a caller without a group gets nothing of it.
func checkUpstreamCallers(t *testing.T) {
	grantMetrics(t, "e2e-custom-only", "custom.metrics.k8s.io")
	nobody, customOnly := clientFor(t, "e2e-nobody"), clientFor(t, "e2e-custom-only")
	for _, tc := range []struct {
		who  string
		c    kubernetes.Interface
		path string
		want int
	}{
		{"e2e-nobody", nobody, theirsPath, http.StatusForbidden},
		{"e2e-nobody", nobody, externalPath, http.StatusForbidden},
		{"e2e-custom-only", customOnly, externalPath, http.StatusForbidden},
		{"e2e-custom-only", customOnly, theirsPath, http.StatusOK},
	} {
		poll.Until(t, 30*time.Second, tc.who+" "+tc.path, func() error {
			code, body, _ := rawGet(t.Context(), tc.c, tc.path)
			if code != tc.want {
				return fmt.Errorf("%d %s, want %d", code, body, tc.want)
			}
			if code == http.StatusForbidden && strings.Contains(string(body), "items") {
				return fmt.Errorf("a refused answer carries metrics: %s", body)
			}
			return nil
		})
	}
}

// loadResult is what one path answered under load.
type loadResult struct {
	latencies []time.Duration
	codes     map[int]int
	bodies    map[string]int
}

// runLoad sends GETs of paths from clients goroutines (each alternating
// between the paths) through kube-apiserver for d.
func runLoad(ctx context.Context, c kubernetes.Interface, paths []string, clients int, d time.Duration) map[string]*loadResult {
	out := map[string]*loadResult{}
	for _, p := range paths {
		out[p] = &loadResult{codes: map[int]int{}, bodies: map[string]int{}}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i := range clients {
		wg.Go(func() {
			for n := i; time.Now().Before(end) && ctx.Err() == nil; n++ {
				p := paths[n%len(paths)]
				code, body, took := rawGet(ctx, c, p)
				mu.Lock()
				r := out[p]
				r.latencies = append(r.latencies, took)
				r.codes[code]++
				if code != http.StatusOK {
					r.bodies[string(body)]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return out
}

// Load of the kill test: 4 clients for 5 s per phase.
const (
	loadClients  = 4
	loadDuration = 5 * time.Second
)

// checkUpstreamKilled measures Ebbflow's own metric and the upstream's under
// load, kills the upstream and measures again: the upstream's metric fails
// fast as a 503 naming it, Ebbflow's own answers every request.
func checkUpstreamKilled(t *testing.T, up *upstreamProcess, admin kubernetes.Interface, want float64) {
	paths := []string{ownPath, theirsPath}
	before := runLoad(t.Context(), admin, paths, loadClients, loadDuration)
	for _, p := range paths {
		if r := before[p]; r.codes[http.StatusOK] != len(r.latencies) {
			t.Errorf("upstream up: %s answered %v", p, r.codes)
		}
	}
	up.kill()
	after := runLoad(t.Context(), admin, paths, loadClients, loadDuration)
	own, theirs := after[ownPath], after[theirsPath]
	if own.codes[http.StatusOK] != len(own.latencies) || len(own.latencies) == 0 {
		t.Errorf("upstream killed: Ebbflow's own metric answered %v %v", own.codes, own.bodies)
	}
	if theirs.codes[http.StatusServiceUnavailable] != len(theirs.latencies) {
		t.Errorf("upstream killed: its metric answered %v, want only 503s", theirs.codes)
	}
	for body := range theirs.bodies {
		if !strings.Contains(body, `upstream \"`+upstreamName+`\" unavailable`) || strings.Contains(body, "127.0.0.1") {
			t.Errorf("upstream killed: a failure says %s, want the upstream's name only", body)
		}
	}
	if p99 := percentile(theirs.latencies, 0.99); p99 > time.Second {
		t.Errorf("upstream killed: its failures took %v at p99, want fast (connection refused), under 1s", p99)
	}
	if p99 := percentile(own.latencies, 0.99); p99 > 2*time.Second {
		t.Errorf("upstream killed: Ebbflow's own metric took %v at p99", p99)
	}
	for _, ph := range []struct {
		name string
		r    map[string]*loadResult
	}{{"up", before}, {"killed", after}} {
		for _, p := range paths {
			r := ph.r[p]
			t.Logf("upstream %s: %s: %d requests, p50 %v, p99 %v, codes %v", ph.name, p[strings.LastIndex(p, "/")+1:], len(r.latencies),
				percentile(r.latencies, 0.5).Round(100*time.Microsecond), percentile(r.latencies, 0.99).Round(100*time.Microsecond), r.codes)
		}
	}
	m := scrapeAdapter(t)
	if !strings.Contains(m, `ebbflow_adapter_upstream_request_duration_seconds_count{group="custom.metrics.k8s.io",outcome="unavailable",upstream="prometheus-adapter"}`) {
		t.Errorf("the adapter's /metrics counts no unavailable request of the upstream")
	}
	// prometheus-adapter's first rule lists e2e_inflight for pods and for
	// namespaces, all of them Ebbflow's own too: not zero, whatever the count.
	shadowed := `ebbflow_adapter_upstream_shadowed_metrics{group="custom.metrics.k8s.io",upstream="prometheus-adapter"} `
	if line := grepLines(m, shadowed); line == "" || strings.HasSuffix(line, " 0") {
		t.Errorf("the adapter's /metrics counts no shadowed metric of the upstream:\n%s", grepLines(m, "ebbflow_adapter_upstream_"))
	}
}

// grepLines are the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// scrapeAdapter reads ebbflow-adapter's /metrics as the admin user.
func scrapeAdapter(t *testing.T) string {
	t.Helper()
	tlsCfg, err := rest.TLSConfigFor(env().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env().AdapterCA())
	tlsCfg.RootCAs = pool
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg}}
	resp, err := hc.Get(env().AdapterURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %v %s", err, resp.Status)
	}
	return string(b)
}
