package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// serveFiltered runs one request through the request filter and reports the status
// and whether the next handler was reached.
func serveFiltered(t testing.TB, target string) (int, bool, *metav1.Status) {
	t.Helper()
	reached := false
	h := requestFilter{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = true })}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	var st *metav1.Status
	if !reached {
		st = &metav1.Status{}
		if err := json.Unmarshal(rec.Body.Bytes(), st); err != nil {
			t.Fatalf("%.80s: body is not a Status: %v", target, err)
		}
		if int(st.Code) != rec.Code || st.Kind != "Status" {
			t.Fatalf("%.80s: status %+v does not match HTTP %d", target, st, rec.Code)
		}
	}
	return rec.Code, reached, st
}

func TestMetricsPathChecks(t *testing.T) {
	long := strings.Repeat("a", 254)
	tests := []struct {
		name string
		path string
		code int // 0: passed on
	}{
		{"custom namespaced object", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/web-1/http_requests", 0},
		{"custom selector", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/http_requests", 0},
		{"custom namespace metric", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/metrics/http_requests", 0},
		{"custom cluster object", "/apis/custom.metrics.k8s.io/v1beta1/nodes/node-1/load", 0},
		{"external", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready", 0},
		{"discovery", "/apis/custom.metrics.k8s.io/v1beta2", 0},
		{"other API", "/api/v1/namespaces/" + long, 0},
		{"namespace not a DNS label", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/Not_A_Label/pods/*/m", 400},
		{"namespace too long", "/apis/external.metrics.k8s.io/v1beta1/namespaces/" + strings.Repeat("n", 64) + "/m", 400},
		{"object name too long", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/" + long + "/m", 400},
		{"object name dot-dot", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/%2E%2E/m", 400},
		{"object name at the bound", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/" + long[:253] + "/m", 0},
		{"metric too long", "/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/" + long, 404},
		{"external metric of 1 MB", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/" + strings.Repeat("m", 1<<20), 404},
		{"metric with a space", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/a%20b", 404},
		{"bad selector", "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/m?labelSelector=" + url.QueryEscape("a in (b"), 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, reached, st := serveFiltered(t, tt.path)
			if tt.code == 0 {
				if !reached {
					t.Errorf("stopped with %d: %v", code, st.Message)
				}
				return
			}
			if reached || code != tt.code {
				t.Fatalf("code %d (reached %v), want %d", code, reached, tt.code)
			}
			if len(st.Message) > 400 {
				t.Errorf("message echoes the input: %d bytes", len(st.Message))
			}
		})
	}
}

// FuzzMetricsPath checks the path filter over namespaces, object names and metric
// names: it never panics, what it passes on is bounded and valid, what it stops is a
// Status of 400 or 404 that does not echo the input.
func FuzzMetricsPath(f *testing.F) {
	f.Add("default", "web-1", "http_requests_per_second")
	f.Add("kube-system", "*", "m")
	f.Add("Bad_NS", "..", "a b")
	f.Add("", "x", strings.Repeat("m", 300))
	f.Add("a", "b/c", "d")
	f.Fuzz(func(t *testing.T, namespace, name, metric string) {
		for _, target := range []string{
			"/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + url.PathEscape(namespace) + "/pods/" + url.PathEscape(name) + "/" + url.PathEscape(metric),
			"/apis/external.metrics.k8s.io/v1beta1/namespaces/" + url.PathEscape(namespace) + "/" + url.PathEscape(metric),
		} {
			req, err := http.NewRequest(http.MethodGet, "http://x"+target, nil)
			if err != nil {
				continue
			}
			code, reached, st := serveFiltered(t, req.URL.RequestURI())
			if !reached {
				if code != 400 && code != 404 {
					t.Fatalf("%.80s: code %d", target, code)
				}
				if len(st.Message) > 400 {
					t.Fatalf("%.80s: message of %d bytes", target, len(st.Message))
				}
				continue
			}
			mp, _ := parseMetricsPath(req.URL.Path)
			if mp.namespace != "" && len(validation.IsDNS1123Label(mp.namespace)) > 0 {
				t.Fatalf("passed an invalid namespace %q", mp.namespace)
			}
			if len(mp.name) > maxObjectNameLength || (mp.metric != "" && rules.CheckMetricName(mp.metric) != nil) {
				t.Fatalf("passed name %q metric %q", mp.name, mp.metric)
			}
		}
	})
}
