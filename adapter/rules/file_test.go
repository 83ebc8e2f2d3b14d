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
		`metricsQuery: must not be empty`,
		`externalRules[0] (seriesQuery "queue_messages_ready"): metricsQuery: renders invalid PromQL on sample arguments: 1:61: parse error: unclosed left parenthesis`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
}
