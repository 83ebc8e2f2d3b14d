package rules

import (
	"testing"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestGroupsByResource(t *testing.T) {
	tests := []struct {
		name     string
		template string
		want     bool
	}{
		{"golden trailing by", `sum(rate(<<.Series>>{<<.LabelMatchers>>,container!="POD"}[1m])) by (<<.GroupBy>>)`, true},
		{"leading by", `sum by (<<.GroupBy>>) (irate(<<.Series>>{<<.LabelMatchers>>}[4m]))`, true},
		{"by without spaces", `sum by(<<.GroupBy>>)(<<.Series>>{<<.LabelMatchers>>})`, true},
		{"trailing by without space", `avg(<<.Series>>{<<.LabelMatchers>>})by(<<.GroupBy>>)`, true},
		{"keywords are case-insensitive", `SUM BY (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>})`, true},
		{"trim markers", `sum(<<- .Series ->>{<<.LabelMatchers>>}) by (<< .GroupBy >>)`, true},
		{"no aggregation", `rate(<<.Series>>{<<.LabelMatchers>>}[1m])`, true},
		{"bare selector", `<<.Series>>{<<.LabelMatchers>>}`, true},
		{"nested, both grouped", `max by (<<.GroupBy>>) (sum by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>}))`, true},
		{"grouping is a superset", `histogram_quantile(0.9, sum by (le, <<.GroupBy>>) (rate(<<.Series>>{<<.LabelMatchers>>}[5m])))`, true},
		{"per-series functions", `max_over_time(<<.Series>>{<<.LabelMatchers>>}[5m]) + quantile_over_time(0.5, <<.Series>>{<<.LabelMatchers>>}[5m])`, true},
		{"one-to-one binary operation", `<<.Series>>{<<.LabelMatchers>>} / other{<<.LabelMatchers>>}`, true},
		{"forbidden words inside strings", `<<.Series>>{<<.LabelMatchers>>,mode!="without topk on( sum(x)"}`, true},
		{"forbidden words inside comments", "rate(<<.Series>>{<<.LabelMatchers>>}[1m]) # sum(x) without vector(1)", true},
		{"sum-like metric and label names", `sum_total{<<.LabelMatchers>>,count="1"} * by_hour`, true},

		{"aggregation without grouping", `sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m]))`, false},
		{"grouped by another label", `sum(<<.Series>>{<<.LabelMatchers>>}) by (namespace)`, false},
		{"grouped by the literal label", `sum(<<.Series>>{<<.LabelMatchers>>}) by (pod)`, false},
		{"empty grouping", `sum by () (<<.Series>>{<<.LabelMatchers>>})`, false},
		{"quoted grouping label is the same label (PromQL 3)", `sum by ("<<.GroupBy>>") (<<.Series>>{<<.LabelMatchers>>})`, true},
		{"unbalanced parenthesis is not PromQL", `sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m]) by (<<.GroupBy>>)`, false},
		{"set operator without on", `sum by (<<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>}) unless other{<<.LabelMatchers>>}`, true},
		{"set operator with on", `<<.Series>>{<<.LabelMatchers>>} and on (namespace) other`, false},
		{"grouping by the resource label twice over nested aggregations", `max by (<<.GroupBy>>) (avg by (le, <<.GroupBy>>) (<<.Series>>{<<.LabelMatchers>>}))`, true},
		{"aggregation hidden in a subquery", `max_over_time(sum(<<.Series>>{<<.LabelMatchers>>})[5m:1m])`, false},
		{"without", `sum without (container) (<<.Series>>{<<.LabelMatchers>>})`, false},
		{"outer aggregation ungrouped", `max(sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>))`, false},
		{"second aggregation ungrouped", `sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) / sum(other)`, false},
		{"group aggregator", `group(<<.Series>>{<<.LabelMatchers>>})`, false},
		{"on", `sum(<<.Series>>{<<.LabelMatchers>>} * on(<<.GroupBy>>) other) by (<<.GroupBy>>)`, false},
		{"ignoring", `<<.Series>>{<<.LabelMatchers>>} / ignoring (container) other`, false},
		{"group_left", `<<.Series>>{<<.LabelMatchers>>} * group_left other`, false},
		{"group_right", `<<.Series>>{<<.LabelMatchers>>} * group_right other`, false},
		{"absent", `absent(<<.Series>>{<<.LabelMatchers>>})`, false},
		{"absent_over_time", `absent_over_time(<<.Series>>{<<.LabelMatchers>>}[5m])`, false},
		{"scalar", `<<.Series>>{<<.LabelMatchers>>} / scalar(other)`, false},
		{"vector", `<<.Series>>{<<.LabelMatchers>>} or vector(0)`, false},
		{"topk", `topk(1, <<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)`, false},
		{"bottomk", `bottomk by (<<.GroupBy>>) (1, <<.Series>>{<<.LabelMatchers>>})`, false},
		{"quantile", `quantile(0.9, <<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)`, false},
		{"count_values", `count_values("v", <<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)`, false},
		{"limitk", `limitk by (<<.GroupBy>>) (1, <<.Series>>{<<.LabelMatchers>>})`, false},
		{"label_replace", `label_replace(<<.Series>>{<<.LabelMatchers>>}, "<<.GroupBy>>", "x", "", "")`, false},
		{"label_join", `label_join(<<.Series>>{<<.LabelMatchers>>}, "<<.GroupBy>>", ",", "a")`, false},
		{"sort", `sort(<<.Series>>{<<.LabelMatchers>>})`, false},
		{"sort_desc", `sort_desc(<<.Series>>{<<.LabelMatchers>>})`, false},
		{"LabelValuesByName", `<<.Series>>{pod=~"<<index .LabelValuesByName "pod">>"}`, false},
		{"GroupBySlice", `sum(<<.Series>>{<<.LabelMatchers>>}) by (<<range .GroupBySlice>><<.>><<end>>)`, false},
		{"conditional", `<<if .Series>>sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)<<end>>`, false},
		{"variable", `<<$s := .Series>>sum(<<$s>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)`, false},
		{"unterminated string", `<<.Series>>{<<.LabelMatchers>>,a="x}`, false},
		{"by as a label name", `sum(<<.Series>>{<<.LabelMatchers>>,by="x"}) by (<<.GroupBy>>)`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, rulefile.DiscoveryRule{
				Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
				MetricsQuery: tt.template,
			})
			if got := r.GroupsByResource(); got != tt.want {
				t.Errorf("GroupsByResource() = %v, want %v for %s", got, tt.want, tt.template)
			}
		})
	}
}
