package thanos

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"github.com/ebbflow/ebbflow/test/poll"
)

var podKind = schema.GroupKind{Kind: "Pod"}

// metricsClients returns the custom and external metrics clients, through
// kube-apiserver as the admin user.
func metricsClients(t *testing.T) (custom_metrics.CustomMetricsClient, external_metrics.ExternalMetricsClient) {
	t.Helper()
	cm, em, err := env().MetricsClients()
	if err != nil {
		t.Fatal(err)
	}
	return cm, em
}

// podValues reads metric for every pod of the namespace.
func podValues(ctx context.Context, cm custom_metrics.CustomMetricsClient, metric string) (map[string]float64, error) {
	list, err := cm.NamespacedMetrics(namespace).GetForObjects(podKind, labels.Everything(), metric, labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, v := range list.Items {
		out[v.DescribedObject.Name] = v.Value.AsApproximateFloat64()
	}
	return out, nil
}

// queueValue reads the external queue metric.
func queueValueNow(em external_metrics.ExternalMetricsClient) (float64, error) {
	list, err := em.NamespacedMetrics("default").List(queue, labels.SelectorFromSet(labels.Set{"queue": queueName}))
	if err != nil {
		return 0, err
	}
	if len(list.Items) != 1 {
		return 0, fmt.Errorf("%s: %d values, want 1", queue, len(list.Items))
	}
	return list.Items[0].Value.AsApproximateFloat64(), nil
}

// checkFixture reads every served metric once and compares it with the
// fixture: what one Prometheus serves, each series counted once.
func checkFixture(ctx context.Context, cm custom_metrics.CustomMetricsClient, em external_metrics.ExternalMetricsClient) error {
	got, err := podValues(ctx, cm, inflight)
	if err != nil {
		return fmt.Errorf("%s: %w", inflight, err)
	}
	if !equalValues(got, podInflight) {
		return fmt.Errorf("%s = %v, want %v", inflight, got, podInflight)
	}
	counts, err := podValues(ctx, cm, seriesCount)
	if err != nil {
		return fmt.Errorf("%s: %w", seriesCount, err)
	}
	for pod := range podInflight {
		if counts[pod] != 1 {
			return fmt.Errorf("%s = %v, want 1 per pod (each replica's series counted once)", seriesCount, counts)
		}
	}
	rates, err := podValues(ctx, cm, requestRate)
	if err != nil {
		return fmt.Errorf("%s: %w", requestRate, err)
	}
	for pod := range podInflight {
		if r := rates[pod]; math.Abs(r-requestsPerSecond) > 0.15*requestsPerSecond {
			return fmt.Errorf("%s = %v, want %v ± 15%% per pod", requestRate, rates, requestsPerSecond)
		}
	}
	q, err := queueValueNow(em)
	if err != nil {
		return err
	}
	if q != queueValue {
		return fmt.Errorf("%s = %v, want %v", queue, q, queueValue)
	}
	return nil
}

func equalValues(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// restartAdapter restarts the adapter with args appended to its command line
// instead of the base ones, and restores the base ones when the test ends.
func restartAdapter(t *testing.T, args ...string) {
	t.Helper()
	env().SetAdapterArgs(args)
	t.Cleanup(func() {
		env().SetAdapterArgs(baseAdapterArgs())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env().RestartAdapter(ctx); err != nil {
			t.Errorf("restore adapter: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env().RestartAdapter(ctx); err != nil {
		t.Fatalf("restart adapter with %q: %v", args, err)
	}
}

// TestServesWhatOnePrometheusServes: through Thanos Query (dedup on by
// default), custom and external values equal the fixture and what replica 0
// alone answers to the same queries: no double counting of the two replicas.
func TestServesWhatOnePrometheusServes(t *testing.T) {
	cm, em := metricsClients(t)
	ctx := context.Background()
	poll.Until(t, 90*time.Second, "fixture served through thanos query", func() error { return checkFixture(ctx, cm, em) })
	// The same queries on one replica alone.
	one := env().HA().Replica(0)
	for q, want := range map[string]float64{
		`sum(ha_inflight{namespace="ha",pod="web-1"}) by (pod)`:   podInflight["web-1"],
		`count(ha_inflight{namespace="ha",pod="web-1"}) by (pod)`: 1,
		`sum(ha_queue_messages{queue="orders"}) by (queue)`:       queueValue,
	} {
		v, err := one.Query(ctx, q)
		if err != nil {
			t.Fatalf("replica 0: %s: %v", q, err)
		}
		vec, ok := v.(model.Vector)
		if !ok || len(vec) != 1 || float64(vec[0].Value) != want {
			t.Errorf("replica 0: %s = %v, want %v (as served through thanos)", q, v, want)
		}
	}
}

// TestDiscoveryListsEachSeriesOnce: the adapter's relist through Thanos Query
// lists as many series as one replica holds for the rules' distinct series
// queries (two rules share the in-flight one; it is listed once).
func TestDiscoveryListsEachSeriesOnce(t *testing.T) {
	ctx := context.Background()
	one := env().HA().Replica(0)
	want := 0
	for _, q := range []string{`ha_inflight{namespace!="",pod!=""}`, `ha_requests_total{namespace!="",pod!=""}`, `ha_queue_messages{queue!=""}`} {
		sets, err := one.WaitForSeries(ctx, q, 1)
		if err != nil {
			t.Fatalf("replica 0 series %s: %v", q, err)
		}
		want += len(sets)
	}
	if want != 2*len(podInflight)+1 {
		t.Fatalf("replica 0 holds %d series for the rules, want %d", want, 2*len(podInflight)+1)
	}
	poll.Until(t, 60*time.Second, "adapter's discovered series", func() error {
		got, err := adapterGauge(ctx, "ebbflow_adapter_discovery_series")
		if err != nil {
			return err
		}
		if got != float64(want) {
			return fmt.Errorf("ebbflow_adapter_discovery_series = %v, want %d (one replica's)", got, want)
		}
		return nil
	})
}

// TestReplicaLossFailsNoRequest kills one Prometheus replica (SIGKILL) and
// keeps reading: no request fails and no value changes; then restarts it.
func TestReplicaLossFailsNoRequest(t *testing.T) {
	cm, em := metricsClients(t)
	ctx := context.Background()
	poll.Until(t, 60*time.Second, "fixture served", func() error { return checkFixture(ctx, cm, em) })
	ha := env().HA()
	ha.Replica(1).Kill()
	t.Cleanup(func() {
		if err := ha.Replica(1).Restart(context.Background()); err != nil {
			t.Errorf("restart replica 1: %v", err)
		}
	})
	// Long enough for the adapter's cached answers to expire, Thanos Query's
	// endpoint health checks to notice, and a relist to run.
	const window, every = 20 * time.Second, 250 * time.Millisecond
	reads, failures := 0, []string{}
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(every) {
		reads++
		if err := checkFixture(ctx, cm, em); err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d reads failed or changed while replica 1 was down:\n%s", len(failures), reads, strings.Join(failures, "\n"))
	}
	t.Logf("%d reads over %v with replica 1 killed: all equal to the fixture", reads, window)
}

// TestQueryParameters: the query parameters of --prometheus-url reach Thanos
// Query on every request: with dedup=false the two replicas' series are both
// counted.
func TestQueryParameters(t *testing.T) {
	cm, _ := metricsClients(t)
	ctx := context.Background()
	restartAdapter(t, append(baseAdapterArgs(), "--prometheus-url="+env().HA().QueryURL()+"/?dedup=false&partial_response=true")...)
	poll.Until(t, 60*time.Second, "series counted per replica with dedup=false", func() error {
		counts, err := podValues(ctx, cm, seriesCount)
		if err != nil {
			return err
		}
		for pod := range podInflight {
			if counts[pod] != 2 {
				return fmt.Errorf("%s = %v, want 2 per pod", seriesCount, counts)
			}
		}
		return nil
	})
}

// TestTenantHeader: Thanos Query enforces the tenant of the X-Scope-OrgID
// header; the adapter's --prometheus-header sends it. Another tenant sees
// none of team-a's series, so nothing is discovered or served.
func TestTenantHeader(t *testing.T) {
	cm, _ := metricsClients(t)
	ctx := context.Background()
	restartAdapter(t, "--prometheus-header="+tenantHeader+"=team-b")
	poll.Until(t, 60*time.Second, "nothing served to another tenant", func() error {
		n, err := adapterGauge(ctx, "ebbflow_adapter_discovery_series")
		if err != nil {
			return err
		}
		if n != 0 {
			return fmt.Errorf("another tenant discovered %v series, want 0", n)
		}
		if got, err := podValues(ctx, cm, inflight); err == nil {
			return fmt.Errorf("another tenant read %s = %v, want an error", inflight, got)
		}
		return nil
	})
}

// adapterGauge scrapes the adapter's /metrics (as the admin user, whose
// client certificate the adapter authenticates) and returns one unlabelled
// sample.
func adapterGauge(ctx context.Context, name string) (float64, error) {
	cfg := env().RESTConfig()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return 0, fmt.Errorf("admin client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(env().AdapterCA())
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil,
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env().AdapterURL()+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+`{backend="default"} `); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s not in the adapter's /metrics", name)
}
