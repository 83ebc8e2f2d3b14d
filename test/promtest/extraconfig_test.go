package promtest

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// fakeIfaceAddrs stands for net.InterfaceAddrs on a machine with the real
// node's bridge gateway 10.244.0.1 and an outside address 192.0.2.10.
func fakeIfaceAddrs() ([]net.Addr, error) {
	return []net.Addr{
		&net.IPNet{IP: net.ParseIP("127.0.0.1"), Mask: net.CIDRMask(8, 32)},
		&net.IPNet{IP: net.ParseIP("10.244.0.1"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("192.0.2.10"), Mask: net.CIDRMask(24, 32)},
		&net.IPNet{IP: net.ParseIP("fd00::1"), Mask: net.CIDRMask(64, 128)},
	}, nil
}

func TestCheckLocalIP(t *testing.T) {
	failing := func() ([]net.Addr, error) { return nil, errors.New("netlink broke") }
	tests := []struct {
		host    string
		addrs   func() ([]net.Addr, error)
		wantErr string
	}{
		{host: "127.0.0.1", addrs: failing}, // loopback needs no lookup
		{host: "127.0.0.53", addrs: fakeIfaceAddrs},
		{host: "::1", addrs: fakeIfaceAddrs},
		{host: "10.244.0.1", addrs: fakeIfaceAddrs},
		{host: "fd00::1", addrs: fakeIfaceAddrs},
		{host: "10.244.0.2", addrs: fakeIfaceAddrs, wantErr: "neither on loopback"}, // a pod, not this machine
		{host: "192.0.2.11", addrs: fakeIfaceAddrs, wantErr: "neither on loopback"},
		{host: "0.0.0.0", addrs: fakeIfaceAddrs, wantErr: "neither on loopback"},
		{host: "::", addrs: fakeIfaceAddrs, wantErr: "neither on loopback"},
		{host: "localhost", addrs: fakeIfaceAddrs, wantErr: "not an IP address"},
		{host: "example.com", addrs: fakeIfaceAddrs, wantErr: "not an IP address"},
		{host: "10.244.0.1", addrs: failing, wantErr: "netlink broke"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			err := checkLocalIP(tt.host, tt.addrs)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkLocalIP(%q) = %v, want nil", tt.host, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkLocalIP(%q) = %v, want an error containing %q", tt.host, err, tt.wantErr)
			}
		})
	}
}

func TestCheckLocalTarget(t *testing.T) {
	for addr, ok := range map[string]bool{
		"localhost:9090": true, "127.0.0.1:1": true, "[::1]:2": true, "10.244.0.1:10250": true,
		"10.244.0.7:8080": false, "localhost": false, "example.com:80": false,
	} {
		if err := checkLocalTarget(addr, fakeIfaceAddrs); (err == nil) != ok {
			t.Errorf("checkLocalTarget(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

// kubernetesSD is an extra scrape config as a caller writes it: indented in a
// Go raw string, with a relabeling regex that JSON or YAML re-encoding could
// alter (quotes, backslashes).
const kubernetesSD = `
    - job_name: pods
      kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: /run/kubeconfig
      relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        regex: '([^:]+)(?::\d+)?;(\d+)'
        replacement: $1:$2
        target_label: __address__
    - job_name: static-extra
      static_configs:
      - targets: ["127.0.0.1:9100"]
`

func TestWriteConfigExtraScrapeConfigs(t *testing.T) {
	dir := t.TempDir()
	files := configFiles{config: filepath.Join(dir, "prometheus.yml"), rules: filepath.Join(dir, "rules.yml")}
	o := Options{
		ScrapeInterval:         2 * time.Second,
		RulesYAML:              "groups: []\n",
		ExternalLabels:         map[string]string{"cluster": "local"},
		ExtraScrapeConfigsYAML: kubernetesSD,
	}
	if err := writeConfig(files, o, []Target{{Addr: "127.0.0.1:9200", Job: "app"}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(files.config)
	if err != nil {
		t.Fatal(err)
	}
	// Verbatim: the extra YAML appears unchanged but for its common indentation.
	if !strings.Contains(string(data), dedent(kubernetesSD)) {
		t.Errorf("config does not hold the extra scrape configs verbatim:\n%s", data)
	}
	var got struct {
		Global struct {
			ScrapeInterval string            `yaml:"scrape_interval"`
			ExternalLabels map[string]string `yaml:"external_labels"`
		} `yaml:"global"`
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName        string           `yaml:"job_name"`
			KubernetesSD   []map[string]any `yaml:"kubernetes_sd_configs"`
			RelabelConfigs []struct {
				Regex string `yaml:"regex"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(data, &got); err != nil {
		t.Fatalf("config is not YAML: %v\n%s", err, data)
	}
	if got.Global.ScrapeInterval != "2000ms" || got.Global.ExternalLabels["cluster"] != "local" {
		t.Errorf("global = %+v", got.Global)
	}
	if len(got.RuleFiles) != 1 || got.RuleFiles[0] != files.rules {
		t.Errorf("rule_files = %v, want [%s]", got.RuleFiles, files.rules)
	}
	var jobs []string
	for _, sc := range got.ScrapeConfigs {
		jobs = append(jobs, sc.JobName)
	}
	if strings.Join(jobs, ",") != "app,pods,static-extra" {
		t.Fatalf("jobs = %v, want [app pods static-extra]", jobs)
	}
	pods := got.ScrapeConfigs[1]
	if len(pods.KubernetesSD) != 1 || pods.KubernetesSD[0]["role"] != "pod" {
		t.Errorf("kubernetes_sd_configs = %v", pods.KubernetesSD)
	}
	if len(pods.RelabelConfigs) != 2 || pods.RelabelConfigs[1].Regex != `([^:]+)(?::\d+)?;(\d+)` {
		t.Errorf("relabel_configs = %+v", pods.RelabelConfigs)
	}

	// Without extra scrape configs the file is plain JSON again.
	if err := writeConfig(files, Options{ScrapeInterval: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(files.config); !strings.HasPrefix(string(data), "{") || strings.Contains(string(data), "pods") {
		t.Errorf("config without extras:\n%s", data)
	}
}

func TestExtraScrapeConfigsRefused(t *testing.T) {
	tests := []struct {
		name, extra string
		targets     []Target
		wantErr     string
	}{
		{name: "a mapping", extra: "job_name: a\n", wantErr: "want a YAML sequence"},
		{name: "not YAML", extra: "- job_name: [a\n", wantErr: "want a YAML sequence"},
		{name: "no job_name", extra: "- static_configs: []\n", wantErr: "entry 0 has no job_name"},
		{name: "duplicate job", extra: "- job_name: a\n- job_name: a\n", wantErr: `"a" appears twice`},
		{name: "job of a target", extra: "- job_name: test\n", targets: []Target{{Addr: "127.0.0.1:1"}}, wantErr: `"test" is also the job of a target`},
		{name: "flow sequence", extra: "[{job_name: a}]\n", wantErr: "block sequence"},
		{name: "empty sequence", extra: "[]\n", wantErr: "no entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := configFiles{config: filepath.Join(dir, "prometheus.yml")}
			err := writeConfig(files, Options{ScrapeInterval: time.Second, ExtraScrapeConfigsYAML: tt.extra}, tt.targets)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("writeConfig = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := os.Stat(files.config); !os.IsNotExist(err) {
				t.Errorf("a refused config was written (stat: %v)", err)
			}
		})
	}
}

func TestDedent(t *testing.T) {
	for in, want := range map[string]string{
		"- a\n  b\n":             "- a\n  b\n",
		"\n    - a\n\n      b\n": "\n- a\n\n  b\n",
		"  - a\n    - b\n  \n":   "- a\n  - b\n\n",
		"":                       "",
	} {
		if got := dedent(in); got != want {
			t.Errorf("dedent(%q) = %q, want %q", in, got, want)
		}
	}
}
