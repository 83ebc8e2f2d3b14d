package promtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// fakeKubeAPIServer answers the pod list and watch requests of Prometheus'
// kubernetes service discovery (role pod, namespace default) with one
// Running, Ready pod whose IP is 127.0.0.1 and whose container exposes port,
// so the discovered target is a loopback exporter. It serves both the
// streaming list of client-go's WatchListClient (sendInitialEvents, ended
// by a bookmark) and the classic list then watch.
func fakeKubeAPIServer(t *testing.T, port int) *httptest.Server {
	t.Helper()
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": "web-0", "namespace": "default", "uid": "0b8a4f5e-web-0", "resourceVersion": "7",
			"labels": map[string]string{"app": "web"},
		},
		"spec": map[string]any{
			"nodeName": "node-0",
			"containers": []any{map[string]any{
				"name": "app", "image": "ebbflow-sampleapp",
				"ports": []any{map[string]any{"name": "metrics", "containerPort": port, "protocol": "TCP"}},
			}},
		},
		"status": map[string]any{
			"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
		},
	}
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.String())
		mu.Unlock()
		if r.URL.Path != "/api/v1/namespaces/default/pods" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		if q.Get("watch") != "true" && q.Get("watch") != "1" {
			_ = json.NewEncoder(w).Encode(map[string]any{
				"apiVersion": "v1", "kind": "PodList",
				"metadata": map[string]any{"resourceVersion": "7"}, "items": []any{pod},
			})
			return
		}
		enc := json.NewEncoder(w)
		if q.Get("sendInitialEvents") == "true" {
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": pod})
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{
					"resourceVersion": "7",
					"annotations":     map[string]string{"k8s.io/initial-events-end": "true"},
				},
			}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done() // no further changes
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("fake kube-apiserver requests:\n%s", strings.Join(requests, "\n"))
		}
	})
	return srv
}

// kubernetesPodsJob is a scrape config as the real node's Prometheus uses:
// pods found through kubernetes_sd_configs, their name as a label.
func kubernetesPodsJob(apiServer string) string {
	return fmt.Sprintf(`
		- job_name: kubernetes-pods
		  kubernetes_sd_configs:
		  - role: pod
		    api_server: %s
		    namespaces:
		      names: [default]
		  relabel_configs:
		  - source_labels: [__meta_kubernetes_pod_phase]
		    regex: Running
		    action: keep
		  - source_labels: [__meta_kubernetes_pod_name]
		    target_label: pod
		  - source_labels: [__meta_kubernetes_namespace]
		    target_label: namespace
	`, apiServer)
}

// tabsToSpaces makes a Go raw string indented with tabs into YAML indentation.
func tabsToSpaces(s string) string { return strings.ReplaceAll(s, "\t", "  ") }

func TestPrometheus3KubernetesSDAndExtraScrapeConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	exp := exporter.New()
	exp.Start(t)
	exp.SetGauge("queue_messages_ready", map[string]string{"queue": "orders"}, 42)
	_, portStr, err := net.SplitHostPort(exp.Addr())
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	kube := fakeKubeAPIServer(t, port)

	extra := tabsToSpaces(kubernetesPodsJob(kube.URL) + fmt.Sprintf(`
		- job_name: extra-static
		  static_configs:
		  - targets: [%q]
	`, exp.Addr()))
	prom := promtest.Start(t, promtest.Options{
		Prometheus3:            true,
		ScrapeInterval:         500 * time.Millisecond,
		Targets:                []promtest.Target{{Addr: exp.Addr(), Job: "static"}},
		ExtraScrapeConfigsYAML: extra,
	})

	info, err := prom.API().Buildinfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.Version, "3.") {
		t.Fatalf("build info version = %q, want Prometheus 3", info.Version)
	}
	t.Logf("prometheus %s (%s) at %s", info.Version, prom.Binary(), prom.URL())

	cfg, err := os.ReadFile(prom.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "- job_name: kubernetes-pods\n") {
		t.Errorf("%s lacks the extra scrape configs:\n%s", prom.ConfigPath(), cfg)
	}
	// promtool of the same build (next to prometheus) accepts the file.
	promtool := filepath.Join(filepath.Dir(prom.Binary()), "promtool")
	if out, err := exec.CommandContext(ctx, promtool, "check", "config", prom.ConfigPath()).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}

	// The generated job, the extra static job and the pod found through the
	// kubernetes service discovery all scrape the exporter.
	for _, sel := range []string{
		`queue_messages_ready{job="static"}`,
		`queue_messages_ready{job="extra-static"}`,
		`queue_messages_ready{job="kubernetes-pods",namespace="default",pod="web-0"}`,
	} {
		if _, err := prom.WaitForVector(ctx, sel, func(v model.Vector) bool {
			return len(v) == 1 && v[0].Value == 42
		}); err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
	}
	want := "127.0.0.1:" + portStr
	v, err := prom.Query(ctx, `up{job="kubernetes-pods"}`)
	if err != nil {
		t.Fatal(err)
	}
	if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || string(vec[0].Metric["instance"]) != want {
		t.Errorf(`up{job="kubernetes-pods"} = %v, want one series with instance %s`, v, want)
	}
}

// TestPrometheus2RefusesKubernetesSD shows why Options.Prometheus3 exists:
// Debian's Prometheus 2.42 does not start with kubernetes_sd_configs.
func TestPrometheus2RefusesKubernetesSD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := promtest.StartProcess(ctx, promtest.Options{
		Dir:                    t.TempDir(),
		ExtraScrapeConfigsYAML: tabsToSpaces(kubernetesPodsJob("http://127.0.0.1:1")),
	})
	if err == nil {
		t.Fatal("Debian's Prometheus started with kubernetes_sd_configs")
	}
	if !strings.Contains(err.Error(), "kubernetes_sd_configs") {
		t.Errorf("error does not name kubernetes_sd_configs: %v", err)
	}
}

func TestListenHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, host := range []string{"192.0.2.1", "0.0.0.0", "localhost"} {
		if s, err := promtest.StartProcess(ctx, promtest.Options{Dir: t.TempDir(), ListenHost: host}); err == nil {
			_ = s.Close()
			t.Errorf("StartProcess listened on %s", host)
		}
	}
	// Another loopback address than the default one.
	prom := promtest.Start(t, promtest.Options{ListenHost: "127.0.0.2"})
	if !strings.HasPrefix(prom.URL(), "http://127.0.0.2:") {
		t.Fatalf("URL() = %s, want 127.0.0.2", prom.URL())
	}
	if _, err := prom.Query(ctx, "vector(1)"); err != nil {
		t.Fatal(err)
	}
}

// TestPrometheus3OnlyKubernetesSD: hack/build-tools.sh compiles in no other
// service discovery than kubernetes (and the always-present file and http).
func TestPrometheus3OnlyKubernetesSD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := promtest.StartProcess(ctx, promtest.Options{
		Dir:                    t.TempDir(),
		Prometheus3:            true,
		ExtraScrapeConfigsYAML: "- job_name: consul\n  consul_sd_configs:\n  - server: 127.0.0.1:1\n",
	})
	if err == nil || !strings.Contains(err.Error(), "consul_sd_configs") {
		t.Fatalf("StartProcess with consul_sd_configs = %v, want a refusal naming it", err)
	}
}
