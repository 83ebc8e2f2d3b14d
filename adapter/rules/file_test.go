package rules

import (
	"strings"
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// TestParseReportsEveryProblem: an unknown key does not hide the problems of the rest
// of the file.
func TestParseReportsEveryProblem(t *testing.T) {
	const file = `
rules:
- seriesQuery: '{__name__=~"^http_.*"}'
  seriesFilters:
  - is: "^http_"
    isNot: "_bucket$"
  resources:
    template: "kube_<<.Group>>"
  name: {matches: "^(.*_total$"}
  metricQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: queue_messages_ready
  resources: {namespaced: false}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}'
resourceRules:
  cpu: {containerQuery: '<<.Series', nodeQuery: x, resources: {template: '<<.Resource>>'}}
  memory: {containerQuery: x, nodeQuery: x, resources: {overrides: {node: {resource: nodez}}}}
`
	_, err := Parse([]byte(file), rulefile.DefaultRESTMapper())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`rules[0].metricQuery: unknown key "metricQuery" (did you mean "metricsQuery"?)`,
		`seriesFilters[0]: set exactly one of is and isNot, not both`,
		`name.matches: invalid regular expression`,
		`resources.template: must use <<.Resource>>`,
		`resourceRules.cpu: containerQuery: invalid template: containerQuery:1: unclosed action`,
		`resourceRules.memory: resources.overrides.node: unknown resource "nodez"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
	// What prometheus-adapter starts with is no error: an empty metricsQuery (of
	// rules[0], whose key is misspelt) and a metricsQuery that is not PromQL.
	for _, notWant := range []string{"rules[0] (seriesQuery \"{__name__=~\\\"^http_.*\\\"}\"): metricsQuery", "externalRules[0]"} {
		if strings.Contains(err.Error(), notWant) {
			t.Errorf("error reports %q, which prometheus-adapter starts with:\n%v", notWant, err)
		}
	}
}
