package sampleapp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestServeMux(t *testing.T) {
	const cpuPerRequest = 20 * time.Millisecond
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(NewServeMux(reg, cpuPerRequest))
	defer srv.Close()

	const n = 5
	cpu0 := processCPU(t)
	for range n {
		resp, err := http.Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("GET / = %d %q, want 200 ok", resp.StatusCode, body)
		}
	}
	if cpu := processCPU(t) - cpu0; cpu < n*cpuPerRequest-10*time.Millisecond {
		t.Errorf("%d requests cost %v of cpu, want >= %v", n, cpu, n*cpuPerRequest)
	}

	for _, tc := range []struct{ method, path string }{{http.MethodPost, "/"}, {http.MethodGet, "/other"}} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s %s = 200, want an error", tc.method, tc.path)
		}
	}

	want := `
# HELP http_requests_total HTTP requests answered, by status code, method and handler.
# TYPE http_requests_total counter
http_requests_total{code="200",handler="/",method="get"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "http_requests_total"); err != nil {
		t.Error(err)
	}
}
