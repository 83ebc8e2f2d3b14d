package rules

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// oddFile is a rule file prometheus-adapter v0.12.0 starts with, holding one of
// each thing it starts with and mishandles later. Every one must parse, with a
// warning each, and fail (or serve) at request time as prometheus-adapter does.
const oddFile = `
rules:
- seriesQuery: 'http_requests_total{pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}, app.kubernetes.io/name: {group: apps, resource: deployment}}}
  name: {matches: "^(.*)_total$", as: "$1_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)'
- seriesQuery: 'up{pod!=""}'
  resources: {template: "<<.Resource>>"}
- seriesQuery: 'rate(x[5m])'
  resources: {template: "<<.Resource>>"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m]) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: queue_messages_ready
  resources: {overrides: {pod: {resource: pod}}}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>})'
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>}[3m]))'
    nodeQuery: ''
    resources: {overrides: {node: {resource: node}}}
    containerLabel: ''
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_bytes{<<.LabelMatchers>>})'
    resources: {template: "<<.Resource>>"}
    containerLabel: container
`

func TestParseAcceptsWhatPrometheusAdapterStartsWith(t *testing.T) {
	set, err := Parse([]byte(oddFile), testMapper())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	fields := map[string]bool{}
	for _, w := range set.Warnings {
		fields[w.Rule+" "+w.Field] = true
	}
	for _, want := range []string{
		`rules[0] (seriesQuery "http_requests_total{pod!=\"\"}") name.as`,
		`rules[0] (seriesQuery "http_requests_total{pod!=\"\"}") resources.overrides["app.kubernetes.io/name"]`,
		`rules[1] (seriesQuery "up{pod!=\"\"}") metricsQuery`,
		`rules[2] (seriesQuery "rate(x[5m])") seriesQuery`,
		`rules[2] (seriesQuery "rate(x[5m])") metricsQuery`,
		`externalRules[0] (seriesQuery "queue_messages_ready") resources`,
		`resourceRules window`,
		`resourceRules.cpu containerLabel`,
		`resourceRules.cpu nodeQuery`,
		`resourceRules.cpu resources`,
	} {
		if !fields[want] {
			t.Errorf("no warning on %s; warnings: %v", want, set.Warnings)
		}
	}
	byIndex := func(kind Kind, i int) *Rule {
		for _, r := range set.Rules {
			if r.Kind() == kind && r.Index() == i {
				return r
			}
		}
		t.Fatalf("no %s rule %d", kind, i)
		return nil
	}
	pods := schema.GroupResource{Resource: "pods"}

	t.Run("as with $1_text names no metric", func(t *testing.T) {
		if name, ok := byIndex(Custom, 0).MetricName("http_requests_total"); ok {
			t.Errorf("MetricName = %q, want none (the expansion is empty)", name)
		}
	})
	t.Run("override label that is not a label name is ignored", func(t *testing.T) {
		got, _ := byIndex(Custom, 0).Resources([]string{"app.kubernetes.io/name", "pod"})
		if len(got) != 1 || got[0] != pods {
			t.Errorf("Resources = %v, want [pods]", got)
		}
	})
	t.Run("empty metricsQuery fails each request", func(t *testing.T) {
		_, err := byIndex(Custom, 1).CustomQuery(CustomRequest{Series: "up", Namespace: "ns", Resource: pods, Names: []string{"a"}})
		if err == nil || !strings.Contains(err.Error(), "empty query") {
			t.Errorf("CustomQuery error = %v, want an empty query", err)
		}
	})
	t.Run("namespaced external rule without a namespace label fails in a namespace", func(t *testing.T) {
		r := byIndex(External, 0)
		if _, err := r.ExternalQuery("queue_messages_ready", "ns", nil); err == nil {
			t.Error("ExternalQuery in a namespace succeeded")
		}
		if q, err := r.ExternalQuery("queue_messages_ready", "", nil); err != nil || q != "sum(queue_messages_ready{})" {
			t.Errorf("ExternalQuery without namespace = %q, %v", q, err)
		}
	})
	t.Run("resource rules with a zero window, no node query and no container label compile", func(t *testing.T) {
		rr := set.Resource
		if rr == nil || rr.Window != 0 {
			t.Fatalf("resource rules = %+v, want window 0", rr)
		}
		if _, err := rr.CPU.Node.Render(ResourceRequest{Resource: schema.GroupResource{Resource: "nodes"}, Names: []string{"n"}}); err == nil {
			t.Error("the empty node query rendered")
		}
		if _, err := rr.CPU.Container.Render(ResourceRequest{Resource: pods, Namespace: "ns", Names: []string{"p"}}); err == nil {
			t.Error("a pod query rendered without a label for pods or namespaces")
		}
		if q, err := rr.Memory.Container.Render(ResourceRequest{Resource: pods, Namespace: "ns", Names: []string{"p"}, ExtraGroupBy: []string{"container"}}); err != nil || !strings.Contains(q, `pod="p"`) {
			t.Errorf("memory container query = %q, %v", q, err)
		}
	})
}

// TestParseRefusesWhatPrometheusAdapterRefuses: each file makes prometheus-adapter
// v0.12.0 exit at start (its loader or its namers refuse it), and the error names the
// field.
func TestParseRefusesWhatPrometheusAdapterRefuses(t *testing.T) {
	const rule = "rules:\n- seriesQuery: 'up{pod!=\"\"}'\n  resources: {template: \"<<.Resource>>\"}\n  metricsQuery: 'sum(<<.Series>>)'\n"
	tests := []struct{ name, file, want string }{
		{"unknown key", rule + "  metricQuery: x\n", `rules[0].metricQuery: unknown key "metricQuery" (did you mean "metricsQuery"?)`},
		{"unknown top-level key", rule + "rule: []\n", `rule: unknown key "rule"`},
		{"duplicate key", rule + "  seriesQuery: b\n", `rules[0].seriesQuery: duplicate key "seriesQuery"`},
		{"quoted boolean", "externalRules:\n- seriesQuery: q\n  metricsQuery: x\n  resources: {namespaced: 'false'}\n",
			`externalRules[0].resources.namespaced: expected true or false, found the string "false" (remove the quotes)`},
		{"integer as boolean", "externalRules:\n- seriesQuery: q\n  metricsQuery: x\n  resources: {namespaced: 0}\n",
			`externalRules[0].resources.namespaced: expected true or false, found "0"`},
		{"list for a string", "rules:\n- seriesQuery: [a]\n", `rules[0].seriesQuery: expected a string, found a list`},
		{"mapping for a list", "rules: {seriesQuery: a}\n", `rules: expected a list, found a mapping`},
		{"duration out of grammar", "resourceRules: {window: 5 minutes}\n", `resourceRules.window: expected a duration such as 5m or 30s, found "5 minutes"`},
		{"version in an override", "rules:\n- resources: {overrides: {pod: {resource: pod, version: v1}}}\n", `rules[0].resources.overrides.pod.version: unknown key "version"`},
		{"filter with is and isNot", rule + "  seriesFilters: [{is: a, isNot: b}]\n", `seriesFilters[0]: set exactly one of is and isNot, not both`},
		{"filter with neither", rule + "  seriesFilters: [{}]\n", `seriesFilters[0]: set exactly one of is and isNot`},
		{"filter not RE2", rule + "  seriesFilters: [{is: '(?=a)'}]\n", `seriesFilters[0].is: invalid regular expression`},
		{"name.matches not RE2", rule + "  name: {matches: '('}\n", `name.matches: invalid regular expression`},
		{"two groups and no as", rule + "  name: {matches: '(a)(b)'}\n", `name.as: must be set: name.matches has 2 capture groups`},
		{"template does not parse", "rules:\n- seriesQuery: q\n  resources: {template: '<<.Resource'}\n", `resources.template: invalid template`},
		{"template without .Resource", "rules:\n- seriesQuery: q\n  resources: {template: 'kube_<<.Group>>'}\n", `resources.template: must use <<.Resource>>`},
		{"unknown resource", "rules:\n- seriesQuery: q\n  resources: {overrides: {x: {resource: gizmo}}}\n", `resources.overrides.x: unknown resource "gizmo"`},
		{"metricsQuery does not parse", "rules:\n- seriesQuery: q\n  resources: {template: '<<.Resource>>'}\n  metricsQuery: '<<.Series'\n", `metricsQuery: invalid template`},
		{"containerQuery does not parse", "resourceRules:\n  cpu: {containerQuery: '<<if>>', resources: {template: '<<.Resource>>'}}\n", `resourceRules.cpu: containerQuery: invalid template`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.file), testMapper())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
