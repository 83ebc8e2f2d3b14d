package prom

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadBackendClients(t *testing.T) {
	dir := t.TempDir()
	def := BackendDefaults{Timeout: 30 * time.Second, MaxConcurrent: 8, MaxResponseBytes: DefaultMaxResponseBytes}
	if b, names, err := LoadBackendClients("", def); err != nil || b != nil || names != nil {
		t.Fatalf("no file: %v %v %v, want no backends", b, names, err)
	}
	path := writeFile(t, dir, "ok.yaml", "backends:\n- name: a\n  url: http://a:9090\n  timeout: 3s\n  maxConcurrentQueries: 2\n- name: b\n  url: https://b/prom?dedup=true\n  verb: POST\n")
	b, names, err := LoadBackendClients(path, def)
	if err != nil || len(b) != 2 || strings.Join(names, ",") != "a,b" {
		t.Fatalf("valid file: %v %v %v", b, names, err)
	}
	if b["a"].Timeout != 3*time.Second || b["b"].Timeout != def.Timeout {
		t.Errorf("timeouts %v %v, want 3s and the default", b["a"].Timeout, b["b"].Timeout)
	}
	if b["a"].MaxConcurrent != 2 || b["b"].MaxConcurrent != def.MaxConcurrent {
		t.Errorf("concurrency %d %d, want 2 and the default", b["a"].MaxConcurrent, b["b"].MaxConcurrent)
	}
	for name, c := range b {
		if c.Client == nil {
			t.Errorf("backend %s has no client", name)
		}
	}
	bad := writeFile(t, dir, "bad.yaml", "backends:\n- name: a\n  url: http://a\n  basicAuth: {username: u, passwordFile: /p}\n  tokenFile: /t\n")
	if _, _, err := LoadBackendClients(bad, def); err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "backends[0]: tokenFile") {
		t.Errorf("bad file: %v, want the path and the field", err)
	}
	if _, _, err := LoadBackendClients(filepath.Join(dir, "missing.yaml"), def); err == nil || !strings.Contains(err.Error(), "read backends file") {
		t.Errorf("missing file: %v", err)
	}
	badCA := writeFile(t, dir, "ca.yaml", "backends:\n- name: tls\n  url: https://a\n  caFile: "+filepath.Join(dir, "no-such-ca.pem")+"\n")
	if _, _, err := LoadBackendClients(badCA, def); err == nil || !strings.Contains(err.Error(), `backend "tls"`) {
		t.Errorf("unreadable CA: %v, want the backend named", err)
	}
}

// Each backend's client sends its own URL parameters, verb and headers.
func TestLoadBackendClientsSendsBackendSettings(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		seen[req.URL.Query().Get("tenant")] = req.Method + " " + req.Header.Get("X-Scope-OrgID")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer srv.Close()
	path := writeFile(t, t.TempDir(), "b.yaml", "backends:\n- name: a\n  url: "+srv.URL+"?tenant=a\n  headers: {x-scope-orgid: team-a}\n- name: b\n  url: "+srv.URL+"?tenant=b\n  verb: POST\n")
	b, _, err := LoadBackendClients(path, BackendDefaults{Timeout: 5 * time.Second, MaxResponseBytes: DefaultMaxResponseBytes})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := b[name].Client.Query(context.Background(), "up"); err != nil {
			t.Fatalf("backend %s: %v", name, err)
		}
	}
	if seen["a"] != "GET team-a" || seen["b"] != "POST " {
		t.Errorf("requests seen %v, want a: GET with its header, b: POST without", seen)
	}
}
