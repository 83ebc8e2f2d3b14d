package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckBackends: with --prometheus-backends-file every rule's backend must
// be defined there (or be default); without it, names are only noted as unchecked.
func TestConfigCheckBackends(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte(`
externalRules:
- seriesQuery: 'queue_depth{queue!=""}'
  backend: team-a
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
- seriesQuery: 'jobs{queue!=""}'
  backend: team-b
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`), 0o600)
	backends := filepath.Join(dir, "backends.yaml")
	os.WriteFile(backends, []byte("backends:\n- name: team-a\n  url: http://prometheus.team-a:9090\n"), 0o600)
	badBackends := filepath.Join(dir, "bad-backends.yaml")
	os.WriteFile(badBackends, []byte("backends:\n- name: team-a\n  url: prometheus\n"), 0o600)

	out, err := run(t, "config", "check", rules)
	if err != nil || !strings.Contains(out, "note: backends team-a, team-b are not checked") {
		t.Errorf("without a backends file: %v\n%s", err, out)
	}
	out, err = run(t, "config", "render", rules, "--series", `jobs{queue="q"}`)
	if err != nil || !strings.Contains(out, `externalRules[1]: metric "jobs" (backend "team-b")`) {
		t.Errorf("render names the rule's backend: %v\n%s", err, out)
	}
	_, err = run(t, "config", "check", "--prometheus-backends-file", backends, rules)
	if err == nil || !strings.Contains(err.Error(), `externalRules[1] (seriesQuery "jobs{queue!=\"\"}"): backend: unknown backend "team-b" (known: default, team-a)`) {
		t.Errorf("unknown backend: %v", err)
	}
	if strings.Contains(err.Error(), "externalRules[0]") {
		t.Errorf("a defined backend reported: %v", err)
	}
	_, err = run(t, "config", "check", "--prometheus-backends-file", badBackends, rules)
	if err == nil || !strings.Contains(err.Error(), "backends[0]: url: must be an http or https URL") {
		t.Errorf("bad backends file: %v", err)
	}
}
