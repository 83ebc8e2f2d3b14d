package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadBackends(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := NewOptions()
	if b, names, err := o.loadBackends(); err != nil || b != nil || names != nil {
		t.Fatalf("no file: %v %v %v, want no backends", b, names, err)
	}
	o.BackendsFile = write("ok.yaml", "backends:\n- name: a\n  url: http://a:9090\n  timeout: 3s\n  maxConcurrentQueries: 2\n- name: b\n  url: https://b/prom?dedup=true\n  verb: POST\n")
	b, names, err := o.loadBackends()
	if err != nil || len(b) != 2 || strings.Join(names, ",") != "a,b" {
		t.Fatalf("valid file: %v %v %v", b, names, err)
	}
	if b["a"].Timeout != 3*time.Second || b["b"].Timeout != o.PrometheusTimeout {
		t.Errorf("timeouts %v %v, want 3s and --prometheus-timeout", b["a"].Timeout, b["b"].Timeout)
	}
	if b["a"].MaxConcurrent != 2 || b["b"].MaxConcurrent != o.MaxConcurrentQueries {
		t.Errorf("concurrency %d %d, want 2 and --max-concurrent-queries", b["a"].MaxConcurrent, b["b"].MaxConcurrent)
	}
	o.BackendsFile = write("bad.yaml", "backends:\n- name: a\n  url: http://a\n  basicAuth: {username: u, passwordFile: /p}\n  tokenFile: /t\n")
	if _, _, err := o.loadBackends(); err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "backends[0]: tokenFile") {
		t.Errorf("bad file: %v, want the path and the field", err)
	}
	o.BackendsFile = filepath.Join(dir, "missing.yaml")
	if _, _, err := o.loadBackends(); err == nil || !strings.Contains(err.Error(), "read backends file") {
		t.Errorf("missing file: %v", err)
	}
}
