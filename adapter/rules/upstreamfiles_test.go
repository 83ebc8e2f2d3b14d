package rules

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// chartTestdata holds prometheus-adapter's own rule files, as its chart (5.3.0)
// renders and documents them (see each file's header for its origin).
const chartTestdata = "../../test/chart/testdata"

// TestPrometheusAdapterOwnFiles: the rule file prometheus-adapter's chart renders by
// default, and the file its values' commented-out examples (custom, external and
// resource rules) give, load without an error or a warning.
func TestPrometheusAdapterOwnFiles(t *testing.T) {
	defaultConfig, err := os.ReadFile(filepath.Join(chartTestdata, "prometheus-adapter-default-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples := examplesRuleFile(t, filepath.Join(chartTestdata, "prometheus-adapter-rules-examples.yaml"))
	for name, tc := range map[string]struct {
		data              []byte
		custom, external  int
		wantResourceRules bool
	}{
		"default config": {data: defaultConfig, custom: 3, external: 0},
		"chart examples": {data: examples, custom: 1, external: 1, wantResourceRules: true},
	} {
		t.Run(name, func(t *testing.T) {
			set, err := Parse(tc.data, rulefile.DefaultRESTMapper())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if custom, external := set.Counts(); custom < tc.custom || external != tc.external {
				t.Errorf("%d custom and %d external rules, want at least %d and %d", custom, external, tc.custom, tc.external)
			}
			if (set.Resource != nil) != tc.wantResourceRules {
				t.Errorf("resourceRules compiled: %v, want %v", set.Resource != nil, tc.wantResourceRules)
			}
			for _, w := range set.Warnings {
				t.Errorf("warning: %v", w)
			}
		})
	}
}

// examplesRuleFile turns the chart's rules.custom, rules.external and
// rules.resource values into the rule file the chart renders from them.
func examplesRuleFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Rules struct {
			Custom   []any `yaml:"custom"`
			External []any `yaml:"external"`
			Resource any   `yaml:"resource"`
		} `yaml:"rules"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(map[string]any{
		"rules": values.Rules.Custom, "externalRules": values.Rules.External, "resourceRules": values.Rules.Resource,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
