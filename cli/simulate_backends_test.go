package cli

import (
	"strings"
	"testing"
)

// A rule naming a backend that --prometheus-backends-file does not define is
// an error naming the rule and its backend field, before Prometheus is asked.
func TestSimulateUnknownBackend(t *testing.T) {
	spec := writeTemp(t, "hpa.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: External
    external:
      metric: {name: jobs}
      target: {type: AverageValue, averageValue: "3"}
`)
	rules := writeTemp(t, "rules.yaml", `externalRules:
- seriesQuery: 'jobs{queue!=""}'
  backend: team-b
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`)
	backends := writeTemp(t, "backends.yaml", "backends:\n- name: team-a\n  url: http://127.0.0.1:1\n")
	args := []string{"simulate", "-f", spec, "--rules", rules, "--prometheus-url", "http://127.0.0.1:1", "--since", "1h"}
	_, err := run(t, append(args, "--prometheus-backends-file", backends)...)
	if err == nil || !strings.Contains(err.Error(), `externalRules[0] (seriesQuery "jobs{queue!=\"\"}"): backend: unknown backend "team-b" (known: default, team-a)`) {
		t.Errorf("unknown backend: %v", err)
	}
	_, err = run(t, args...)
	if err == nil || !strings.Contains(err.Error(), `backend: unknown backend "team-b": no --prometheus-backends-file is given`) {
		t.Errorf("a named backend without a backends file: %v", err)
	}
	bad := writeTemp(t, "bad.yaml", "backends:\n- name: team-b\n  url: prometheus\n")
	_, err = run(t, append(args, "--prometheus-backends-file", bad)...)
	if err == nil || !strings.Contains(err.Error(), "backends[0]: url: must be an http or https URL") {
		t.Errorf("bad backends file: %v", err)
	}
}
