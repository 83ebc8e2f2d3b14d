package promtest

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBuildConfig(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		targets  []Target
		want     []scrapeConfig
		wantGlob globalConfig
		wantErr  string
	}{
		{
			name:     "no targets",
			interval: time.Second,
			want:     []scrapeConfig{},
			wantGlob: globalConfig{ScrapeInterval: "1000ms", ScrapeTimeout: "1000ms", EvaluationInterval: "1000ms"},
		},
		{
			name:     "jobs grouped, defaults applied, timeout capped at 10s",
			interval: time.Minute,
			targets: []Target{
				{Addr: "127.0.0.1:9100", Job: "a", HonorLabels: true},
				{Addr: "localhost:9101"},
				{Addr: "[::1]:9102", Job: "a", HonorLabels: true, Labels: map[string]string{"x": "y"}},
			},
			want: []scrapeConfig{
				{JobName: "a", HonorLabels: true, MetricsPath: "/metrics", Scheme: "http", StaticConfigs: []staticConfig{
					{Targets: []string{"127.0.0.1:9100"}},
					{Targets: []string{"[::1]:9102"}, Labels: map[string]string{"x": "y"}},
				}},
				{JobName: "test", MetricsPath: "/metrics", Scheme: "http", StaticConfigs: []staticConfig{
					{Targets: []string{"localhost:9101"}},
				}},
			},
			wantGlob: globalConfig{ScrapeInterval: "60000ms", ScrapeTimeout: "10000ms", EvaluationInterval: "60000ms"},
		},
		{
			name:     "non-loopback target",
			interval: time.Second,
			targets:  []Target{{Addr: "10.1.2.3:9100"}},
			wantErr:  "neither on loopback nor an address of a local interface",
		},
		{
			name:     "missing port",
			interval: time.Second,
			targets:  []Target{{Addr: "127.0.0.1"}},
			wantErr:  "missing port",
		},
		{
			name:     "job disagrees on honor_labels",
			interval: time.Second,
			targets:  []Target{{Addr: "127.0.0.1:1", Job: "j"}, {Addr: "127.0.0.1:2", Job: "j", HonorLabels: true}},
			wantErr:  "disagree",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildConfig(tt.interval, tt.targets)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Global, tt.wantGlob) {
				t.Errorf("global = %+v, want %+v", got.Global, tt.wantGlob)
			}
			if !reflect.DeepEqual(got.ScrapeConfigs, tt.want) {
				t.Errorf("scrape configs = %+v, want %+v", got.ScrapeConfigs, tt.want)
			}
		})
	}
}

func TestFindBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	bin, err := findBinary(context.Background(), "", false)
	switch {
	case err == nil && bin != "/usr/bin/prometheus":
		t.Errorf("findBinary = %q, want the /usr/bin fallback", bin)
	case err != nil && !errors.Is(err, ErrNotInstalled):
		t.Errorf("err = %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(ErrNotInstalled.Error(), "run hack/install-prometheus.sh") {
		t.Errorf("ErrNotInstalled = %q, must tell the user to run hack/install-prometheus.sh", ErrNotInstalled)
	}
	if _, err := findBinary(context.Background(), "/nonexistent/prometheus", true); err == nil {
		t.Error("findBinary accepted a missing explicit binary")
	}
}

func TestWriteConfigExternalLabels(t *testing.T) {
	dir := t.TempDir()
	files := configFiles{config: dir + "/prometheus.yml", rules: dir + "/rules.yml"}
	o := Options{ScrapeInterval: time.Second, ExternalLabels: map[string]string{"replica": "prometheus-1"}}
	if err := writeConfig(files, o, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(files.config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"external_labels": {`) || !strings.Contains(string(data), `"replica": "prometheus-1"`) {
		t.Errorf("config lacks the external label:\n%s", data)
	}
	if err := writeConfig(files, Options{ScrapeInterval: time.Second}, nil); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(files.config); strings.Contains(string(data), "external_labels") {
		t.Errorf("config without external labels mentions them:\n%s", data)
	}
}

func TestWriteConfigRemoteWrite(t *testing.T) {
	dir := t.TempDir()
	files := configFiles{config: dir + "/prometheus.yml", rules: dir + "/rules.yml"}
	o := Options{ScrapeInterval: time.Second, RemoteWrite: []RemoteWrite{{
		URL: "http://127.0.0.1:9009/api/v1/push", Headers: map[string]string{"X-Scope-OrgID": "team-a"},
	}}}
	if err := writeConfig(files, o, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(files.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"url": "http://127.0.0.1:9009/api/v1/push"`, `"X-Scope-OrgID": "team-a"`, `"batch_send_deadline": "1s"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("config lacks %s:\n%s", want, data)
		}
	}
	for _, bad := range []string{"http://192.0.2.1:9009/api/v1/push", "ftp://127.0.0.1/x", "127.0.0.1:9009"} {
		o.RemoteWrite[0].URL = bad
		if err := writeConfig(files, o, nil); err == nil {
			t.Errorf("remote write to %s accepted", bad)
		}
	}
}
