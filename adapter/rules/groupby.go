package rules

import (
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// Why GroupsByResource can be decided from the parsed query
//
// A caller may replace `pod=~"a|b|..."` (one alternative per object) with `pod!=""`
// (every object in the namespace) and keep only the samples whose resource label names
// one of its objects. That is exact when every output sample is computed from input
// series of a single object, i.e. when the query never mixes series of different
// objects:
//
//   - per-series functions (rate, *_over_time, histogram_quantile, ...) and arithmetic
//     with scalars act on one series at a time;
//   - binary operators and set operators without on/ignoring/group_* match series on
//     their full label sets, which include the resource label, so they pair series of
//     the same object only;
//   - an aggregation whose `by` labels include the resource label (by (pod) or
//     by (le, pod)) only combines series of one object.
//
// Everything else may mix objects or conjure samples, so it makes the answer false:
// aggregations without `by` or with a `by` lacking the resource label, `without`,
// on(...)/ignoring(...) and group_left/group_right, absent*, scalar, vector
// (samples not tied to any object), topk/bottomk/quantile/count_values/limitk/
// limit_ratio (whose result depends on the set of series they see), label_replace/
// label_join (which may rewrite the resource label), sort* and info (excluded to stay
// conservative), and any template action other than <<.Series>>, <<.LabelMatchers>>
// and <<.GroupBy>> (.LabelValuesByName, .GroupBySlice, conditionals, pipelines, whose
// output for the namespace-wide request we do not model).
//
// The template is rendered with a marker label standing for the resource label and
// parsed with Prometheus' own parser (rulefile.ParsePromQL); the walk below applies the
// rules to the syntax tree, so strings, comments and keyword case need no care.

// groupByMarker stands for the resource label in the trial rendering.
const groupByMarker = "ebbflow_group_by_marker"

// groupsByResource reports whether the parsed metricsQuery provably keeps every
// object's samples apart (see above).
func groupsByResource(t *template.Template) bool {
	if t.Tree == nil || t.Tree.Root == nil || !onlySimpleFields(t.Tree.Root) {
		return false
	}
	var sb strings.Builder
	err := t.Execute(&sb, queryArgs{
		Series:            "ebbflow_series_marker",
		LabelMatchers:     groupByMarker + `=~"a|b"`,
		LabelValuesByName: map[string]string{groupByMarker: "a|b"},
		GroupBy:           groupByMarker,
		GroupBySlice:      []string{groupByMarker},
	})
	if err != nil {
		return false
	}
	expr, err := rulefile.ParsePromQL(sb.String())
	return err == nil && keepsObjectsApart(expr)
}

// onlySimpleFields reports whether the template is text and <<.Series>>,
// <<.LabelMatchers>> and <<.GroupBy>> actions only.
func onlySimpleFields(root *parse.ListNode) bool {
	for _, n := range root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
		case *parse.ActionNode:
			if f := simpleField(n); f != "Series" && f != "LabelMatchers" && f != "GroupBy" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// simpleField returns X for an action that is exactly <<.X>>, else "".
func simpleField(n *parse.ActionNode) string {
	if n.Pipe == nil || len(n.Pipe.Decl) != 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
		return ""
	}
	f, ok := n.Pipe.Cmds[0].Args[0].(*parse.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return ""
	}
	return f.Ident[0]
}

// groupingAggregations combine series only within their `by` groups.
var groupingAggregations = map[parser.ItemType]bool{
	parser.SUM: true, parser.MIN: true, parser.MAX: true, parser.AVG: true, parser.GROUP: true,
	parser.STDDEV: true, parser.STDVAR: true, parser.COUNT: true,
}

// mixingFunctions conjure samples, drop the resource label or may rewrite it.
var mixingFunctions = []string{"absent", "absent_over_time", "scalar", "vector", "label_replace", "label_join", "info"}

// keepsObjectsApart applies the rules above to every node of expr.
func keepsObjectsApart(expr parser.Expr) bool {
	ok := true
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.AggregateExpr:
			if !groupingAggregations[n.Op] || n.Without || !slices.Contains(n.Grouping, groupByMarker) {
				ok = false
			}
		case *parser.BinaryExpr:
			if m := n.VectorMatching; m != nil && (m.On || len(m.MatchingLabels) > 0 || len(m.Include) > 0 ||
				m.Card == parser.CardOneToMany || m.Card == parser.CardManyToOne) {
				ok = false
			}
		case *parser.Call:
			name := n.Func.Name
			if slices.Contains(mixingFunctions, name) || strings.HasPrefix(name, "sort") {
				ok = false
			}
		}
		return nil
	})
	return ok
}
