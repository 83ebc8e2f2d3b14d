package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/poll"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// backendsNamespace is the namespace label of this test's pod series (a pod
// metric by name needs no object).
const backendsNamespace = "e2e-backends"

// Metrics of the second ("team") Prometheus, scraping its own exporter.
const (
	teamQueueGauge = "e2e_team_queue_depth"
	teamLoadGauge  = "e2e_team_load"
)

// teamRulesYAML adds to the package's rules one external and one custom rule
// reading the "team" backend.
const teamRulesYAML = `
- seriesQuery: 'e2e_team_queue_depth{queue!=""}'
  backend: team
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`

const teamCustomRuleYAML = `
- seriesQuery: 'e2e_team_load{namespace!="",pod!=""}'
  backend: team
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`

// withTeamRules inserts the team rules at the end of rulesYAML's rules and
// externalRules lists.
func withTeamRules() string {
	out := strings.Replace(rulesYAML, "externalRules:\n", strings.TrimPrefix(teamCustomRuleYAML, "\n")+"externalRules:\n", 1)
	return strings.Replace(out, "externalRules:\n", "externalRules:"+teamRulesYAML, 1)
}

// TestSeveralPrometheusBackends: one adapter serves metrics from the cluster's
// Prometheus (the default backend) and from a second Prometheus scraping
// another exporter (backend "team", from --prometheus-backends-file), through
// kube-apiserver. Stopping the second fails only its metrics, with the generic
// 500, while the default backend's keep being served and discovered.
func TestSeveralPrometheusBackends(t *testing.T) {
	cm, em := clients(t)
	ctx := context.Background()
	teamExp := exporter.New()
	teamExp.Start(t)
	queue := fmt.Sprintf("e2e-team-%d", time.Now().UnixNano())
	teamExp.SetGauge(teamQueueGauge, map[string]string{"queue": queue}, 17)
	podLabels := map[string]string{"namespace": backendsNamespace, "pod": "api-0"}
	teamExp.SetGauge(teamLoadGauge, podLabels, 5)
	// The cluster's Prometheus has the same pod series with another value: a
	// rule read from the wrong backend would see it.
	exp().SetGauge(teamLoadGauge, podLabels, 900)
	t.Cleanup(func() { exp().Delete(teamLoadGauge, podLabels) })
	team := promtest.Start(t, promtest.Options{Targets: []promtest.Target{{Addr: teamExp.Addr(), Job: "team", HonorLabels: true}}})

	file := filepath.Join(t.TempDir(), "backends.yaml")
	backends := fmt.Sprintf("backends:\n- name: team\n  url: %s\n  timeout: 5s\n  headers: {X-Scope-OrgID: team}\n", team.URL())
	if err := os.WriteFile(file, []byte(backends), 0o600); err != nil {
		t.Fatal(err)
	}
	env().SetAdapterArgs([]string{"--prometheus-backends-file=" + file})
	if err := env().WriteRules([]byte(withTeamRules())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Rules first: the adapter restarted without the backends file refuses
		// rules naming the team backend.
		if err := env().WriteRules([]byte(rulesYAML)); err != nil {
			t.Errorf("restore rules: %v", err)
		}
		env().SetAdapterArgs(nil)
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := env().RestartAdapter(rctx); err != nil {
			t.Errorf("restart adapter without backends: %v", err)
		}
	})
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := env().RestartAdapter(rctx); err != nil {
		t.Fatalf("restart adapter with backends: %v\n%s", err, env().LogTail("ebbflow-adapter", 30))
	}

	teamQueue := func() (float64, error) {
		list, err := em.NamespacedMetrics(fixtureNamespace).List(teamQueueGauge, labels.SelectorFromSet(labels.Set{"queue": queue}))
		if err != nil {
			return 0, err
		}
		if len(list.Items) != 1 {
			return 0, fmt.Errorf("%d items", len(list.Items))
		}
		return list.Items[0].Value.AsApproximateFloat64(), nil
	}
	teamLoad := func() (float64, error) {
		v, err := cm.NamespacedMetrics(backendsNamespace).GetForObject(schema.GroupKind{Kind: "Pod"}, "api-0", teamLoadGauge, labels.Everything())
		if err != nil {
			return 0, err
		}
		return v.Value.AsApproximateFloat64(), nil
	}
	defaultQueue := func() (float64, error) {
		list, err := em.NamespacedMetrics(fixtureNamespace).List(QueueGauge, labels.SelectorFromSet(labels.Set{"queue": "e2e-orders"}))
		if err != nil {
			return 0, err
		}
		if len(list.Items) != 1 {
			return 0, fmt.Errorf("%d items", len(list.Items))
		}
		return list.Items[0].Value.AsApproximateFloat64(), nil
	}
	expect := func(what string, get func() (float64, error), want float64) {
		t.Helper()
		poll.Until(t, 90*time.Second, what, func() error {
			got, err := get()
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%v, want %v", got, want)
			}
			return nil
		})
	}
	expect("team backend external metric", teamQueue, 17)
	expect("team backend custom metric", teamLoad, 5)
	expect("default backend external metric", defaultQueue, fixtureQueues()["e2e-orders"])
	backendSeries := adapterMetric(t, `ebbflow_adapter_discovery_series{backend="team"}`)
	if backendSeries == "" {
		t.Error(`adapter /metrics has no ebbflow_adapter_discovery_series{backend="team"}`)
	}

	// The team Prometheus goes down.
	team.Stop()
	poll.Until(t, 60*time.Second, "team metric fails with the generic 500", func() error {
		_, err := teamQueue()
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "unable to fetch metrics") {
			return fmt.Errorf("err = %v, want 500 unable to fetch metrics", err)
		}
		if strings.Contains(err.Error(), team.Addr()) {
			return fmt.Errorf("the error names the backend's address: %v", err)
		}
		return nil
	})
	if _, err := teamLoad(); !apierrors.IsInternalError(err) {
		t.Errorf("team custom metric with team down: err = %v, want 500", err)
	}
	expect("default backend metric while team is down", defaultQueue, fixtureQueues()["e2e-orders"])
	// A failed relist of the team backend keeps its metrics discovered.
	poll.Until(t, 60*time.Second, "a failed team relist", func() error {
		if adapterMetric(t, `ebbflow_adapter_discovery_duration_seconds_count{backend="team",outcome="error"}`) == "" {
			return fmt.Errorf("no failed team relist counted yet")
		}
		return nil
	})
	got, err := discovered("external.metrics.k8s.io/v1beta1")
	if err != nil || !slices.Contains(got, teamQueueGauge) || !slices.Contains(got, QueueGauge) {
		t.Errorf("external discovery with team down: %v (err %v), want both backends' metrics", got, err)
	}

	if err := team.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	expect("team backend metric after its Prometheus is back", teamQueue, 17)
}

// adapterMetric returns the first line of the adapter's /metrics starting with
// prefix, or "".
func adapterMetric(t *testing.T, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(adapterMetricsText(t), "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}

// adapterMetricsText is the adapter's /metrics, read with the cluster admin's
// client certificate.
func adapterMetricsText(t *testing.T) string {
	t.Helper()
	admin := env().RESTConfig()
	pair, err := tls.X509KeyPair(admin.CertData, admin.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	code, body := directGetAll(t, adapterClient(t, &pair), "/metrics")
	if code != 200 {
		t.Fatalf("adapter /metrics: %d", code)
	}
	return body
}

// directGetAll is directGet without a header, reading up to 8 MiB of the body.
func directGetAll(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := c.Get(env().AdapterURL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(body)
}
