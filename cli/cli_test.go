package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSeries(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{`up`, `up{}`, false},
		{`http_requests_total{namespace="shop",pod="web-1"}`, `http_requests_total{namespace="shop",pod="web-1"}`, false},
		{` m { a = "x\"y" , b="" } `, `m{a="x\"y",b=""}`, false},
		{`m{a="unterminated}`, ``, true},
		{`m{a=unquoted}`, ``, true},
		{`m{bad-label="x"}`, ``, true},
		{`9metric`, ``, true},
		{`m{a="x"} trailing`, ``, true},
	}
	for _, tt := range tests {
		got, err := ParseSeries(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseSeries(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got.String() != tt.want {
			t.Errorf("ParseSeries(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestConfigCheckAndRender(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte(`
rules:
- seriesQuery: '{__name__="http_requests_total",namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
`), 0o600)
	os.WriteFile(bad, []byte(`
rules:
- seriesQuery: 'x'
  resources: {overide: {}}
  metricsQuery: 'sum(<<.Series>>)'
`), 0o600)

	out, err := run(t, "config", "check", good)
	if err != nil || !strings.Contains(out, "is valid: 1 custom rules, 0 external rules") {
		t.Fatalf("check good: %v\n%s", err, out)
	}
	_, err = run(t, "config", "check", bad)
	if err == nil || !strings.Contains(err.Error(), `rules[0].resources.overide: unknown key "overide"`) {
		t.Fatalf("check bad: want an error naming the key, got %v", err)
	}
	out, err = run(t, "config", "render", good, "--series", `http_requests_total{namespace="shop",pod="web-1"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`rules[0]: metric "http_requests_per_second"`,
		`sum(rate(http_requests_total{namespace="shop",pod="web-1"}[2m])) by (pod)`,
		`sum(rate(http_requests_total{namespace="shop"}[2m])) by (namespace)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	out, _ = run(t, "config", "render", good, "--series", `other_metric{pod="a"}`)
	if !strings.Contains(out, "no rule discovers this series") {
		t.Errorf("render of an unmatched series:\n%s", out)
	}
}

// TestRenderEvaluatesSeriesQuery: a rule without name.matches claims only the series
// its seriesQuery selects.
func TestRenderEvaluatesSeriesQuery(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rules.yaml")
	os.WriteFile(file, []byte(`
rules:
- seriesQuery: '{__name__=~"^container_.*",container!="POD",namespace!="",pod!=""}'
  resources: {template: "<<.Resource>>"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
- seriesQuery: 'up{job="api"}'
  resources: {template: "<<.Resource>>"}
  metricsQuery: 'max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
`), 0o600)
	tests := []struct {
		series string
		want   string // "" means no rule
	}{
		{`container_cpu{container="app",namespace="a",pod="p"}`, `rules[0]: metric "container_cpu"`},
		{`container_cpu{container="POD",namespace="a",pod="p"}`, ""},
		{`container_cpu{container="app",pod="p"}`, ""},
		{`node_load1{namespace="a",pod="p"}`, ""},
		{`up{job="api",namespace="a",pod="p"}`, `rules[1]: metric "up"`},
		{`up{job="web",namespace="a",pod="p"}`, ""},
	}
	for _, tt := range tests {
		out, err := run(t, "config", "render", file, "--series", tt.series)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "" && !strings.Contains(out, "no rule discovers this series") || tt.want != "" && !strings.Contains(out, tt.want) {
			t.Errorf("render %s: want %q in\n%s", tt.series, tt.want, out)
		}
		if tt.want != "" && strings.Count(out, ": metric ") != 1 {
			t.Errorf("render %s: several rules claim it:\n%s", tt.series, out)
		}
	}
}
