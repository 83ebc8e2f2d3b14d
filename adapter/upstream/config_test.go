package upstream

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ups, err := Parse([]byte(`
upstreams:
- name: keda
  service: {namespace: keda, name: keda-operator-metrics-apiserver}
  groups: [external.metrics.k8s.io]
  caFile: /etc/ebbflow/upstreams/keda/ca.crt
- name: prometheus-adapter
  url: https://prometheus-adapter.monitoring.svc:443
  groups: [custom.metrics.k8s.io, external.metrics.k8s.io]
  insecureSkipTLSVerify: true
  timeout: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ups[0].BaseURL(); got != "https://keda-operator-metrics-apiserver.keda.svc:443" {
		t.Errorf("service URL %s", got)
	}
	if ups[0].RequestTimeout() != DefaultTimeout || ups[1].RequestTimeout() != 2*time.Second {
		t.Errorf("timeouts %s %s", ups[0].RequestTimeout(), ups[1].RequestTimeout())
	}
}

// TestParseErrors: each bad file is refused with the field named.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n  tiemout: 1s\n", `unknown field "tiemout"`},
		{"upstreams:\n- name: A_b\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].name"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n- name: a\n  url: https://y\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", `upstreams[1].name: "a" is used twice`},
		{"upstreams:\n- name: a\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].url: exactly one of url and service"},
		{"upstreams:\n- name: a\n  url: http://x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].url: must be an https URL"},
		{"upstreams:\n- name: a\n  url: https://u:p@x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].url: must not carry credentials"},
		{"upstreams:\n- name: a\n  service: {namespace: n, name: s, port: 70000}\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].service.port"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io, custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].groups[1]"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [metrics.k8s.io]\n  insecureSkipTLSVerify: true\n", "upstreams[0].groups[0]: metrics.k8s.io is not forwarded"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: []\n  insecureSkipTLSVerify: true\n", "upstreams[0].groups: at least one"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n", "upstreams[0].caFile: exactly one of caFile, caBundle and insecureSkipTLSVerify"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n  caFile: /ca\n  insecureSkipTLSVerify: true\n", "upstreams[0].caFile: exactly one"},
		{"upstreams:\n- name: a\n  url: https://x\n  groups: [custom.metrics.k8s.io]\n  insecureSkipTLSVerify: true\n  timeout: 2m\n", "upstreams[0].timeout"},
	} {
		_, err := Parse([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("file\n%s\ngot %v, want an error containing %q", tc.file, err, tc.want)
		}
	}
}
