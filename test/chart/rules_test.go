package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/cli"
)

// ruleFile returns the rule file of a render (ConfigMap ebbflow-adapter-config).
func ruleFile(t *testing.T, files []string, sets ...string) []byte {
	t.Helper()
	cm := find(mustTemplate(t, files, sets...), "ConfigMap", "ebbflow-adapter-config")
	if cm == nil {
		t.Fatal("no ConfigMap ebbflow-adapter-config rendered")
	}
	data, ok := cm.Object["data"].(map[string]any)["config.yaml"].(string)
	if !ok || data == "" {
		t.Fatal("ConfigMap ebbflow-adapter-config has no config.yaml")
	}
	return []byte(data)
}

// configCheck runs `ebbflow config check FILE` in process and returns its
// output.
func configCheck(t *testing.T, rules []byte) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, rules, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := cli.NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"config", "check", path})
	err := cmd.Execute()
	return out.String(), err
}

// TestPrometheusAdapterChartValues renders the chart with the rules section of
// prometheus-adapter's chart values.yaml (as shipped, and with its examples
// turned on) and requires `ebbflow config check` to accept the rule file.
func TestPrometheusAdapterChartValues(t *testing.T) {
	for _, tc := range []struct {
		file                   string
		custom, external       int
		resourceRules, extAPIs bool
	}{
		{"prometheus-adapter-rules.yaml", 6, 0, false, false},
		{"prometheus-adapter-rules-examples.yaml", 7, 1, true, true},
		// What prometheus-adapter's chart CI renders (ci/*.yaml), as values of these tests.
		{"ci-default.yaml", 6, 0, false, false},
		{"ci-external-rules.yaml", 6, 1, false, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rules := ruleFile(t, []string{tc.file})
			out, err := configCheck(t, rules)
			if err != nil {
				t.Fatalf("ebbflow config check rejects the rendered rule file: %v\n%s\nrule file:\n%s", err, out, rules)
			}
			t.Logf("ebbflow config check: %s", strings.TrimSpace(out))
			var cfg struct {
				Rules         []any          `json:"rules"`
				ExternalRules []any          `json:"externalRules"`
				ResourceRules map[string]any `json:"resourceRules"`
			}
			if err := yaml.Unmarshal(rules, &cfg); err != nil {
				t.Fatal(err)
			}
			if len(cfg.Rules) != tc.custom || len(cfg.ExternalRules) != tc.external || (cfg.ResourceRules != nil) != tc.resourceRules {
				t.Errorf("rule file has %d rules, %d externalRules, resourceRules %v; want %d, %d, %v",
					len(cfg.Rules), len(cfg.ExternalRules), cfg.ResourceRules != nil, tc.custom, tc.external, tc.resourceRules)
			}
		})
	}
}

// TestDefaultRulesAreUpstreams compares `rules.default: true` with the rule
// file prometheus-adapter's chart renders from its default values
// (testdata/prometheus-adapter-default-config.yaml), as data.
func TestDefaultRulesAreUpstreams(t *testing.T) {
	upstream, err := os.ReadFile(filepath.Join("testdata", "prometheus-adapter-default-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := yaml.Unmarshal(upstream, &want); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(ruleFile(t, nil), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		gy, _ := yaml.Marshal(got)
		wy, _ := yaml.Marshal(want)
		t.Errorf("default rules differ from prometheus-adapter's chart\nchart:\n%s\nprometheus-adapter:\n%s", gy, wy)
	}
}

// TestRulesExistingAndBad: rules.existing replaces the ConfigMap; a rule file
// ebbflow rejects is caught by config check (the test can fail).
func TestRulesExistingAndBad(t *testing.T) {
	objs := mustTemplate(t, nil, "rules.existing=my-rules")
	if find(objs, "ConfigMap", "ebbflow-adapter-config") != nil {
		t.Error("rules.existing set, yet the chart renders its own ConfigMap")
	}
	d := find(objs, "Deployment", "ebbflow-adapter")
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	if !strings.Contains(toYAML(t, vols), "name: my-rules") {
		t.Errorf("the adapter does not mount ConfigMap my-rules: %s", toYAML(t, vols))
	}
	bad := ruleFile(t, nil, "rules.default=false", "rules.custom[0].seriesQuery=up", "rules.custom[0].resources.template=<<.Resource>>",
		"rules.custom[0].name.matches=(", "rules.custom[0].metricsQuery=sum(<<.Series>>)")
	if out, err := configCheck(t, bad); err == nil || !strings.Contains(out+err.Error(), "name.matches") {
		t.Errorf("config check accepted a broken name.matches regexp (err %v):\n%s\n%s", err, bad, out)
	}
}
