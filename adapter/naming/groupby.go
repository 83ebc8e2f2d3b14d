package naming

import (
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"
)

// Why GroupsByResource can be decided from the template text
//
// A caller may replace `pod=~"a|b|..."` (one alternative per object) with `pod!=""`
// (every object in the namespace) and keep only the samples whose resource label names
// one of its objects. That is exact when every output sample is computed from input
// series of a single object, i.e. when the query never mixes series of different
// objects:
//
//   - per-series functions (rate, *_over_time, histogram_quantile, ...) and arithmetic
//     with scalars act on one series at a time;
//   - binary operators and set operators without on/ignoring match series on their
//     full label sets, which include the resource label, so they pair series of the
//     same object only;
//   - an aggregation whose grouping labels include the resource label (by (pod) or
//     by (le, pod)) only sums series of one object.
//
// Everything else may mix objects or conjure samples, so it makes the answer false:
// aggregations without a grouping or grouped by labels that do not include the
// resource label, `without`, on(...)/ignoring(...) and group_left/group_right (which
// match across the resource label), absent*, scalar, vector(...) (samples not tied to
// any object), topk/bottomk/quantile/count_values/limitk/limit_ratio (whose result
// depends on the set of series they see), label_replace/label_join (which may rewrite
// the resource label), sort* (harmless, but excluded to stay conservative) and any
// template action other than <<.Series>>, <<.LabelMatchers>> and <<.GroupBy>>
// (.LabelValuesByName, .GroupBySlice, conditionals, pipelines: text we cannot see).
//
// The check is lexical and conservative: PromQL strings and comments are blanked out,
// keywords are matched case-insensitively as PromQL does, every `by` must be followed by
// a parenthesised list of plain label names containing <<.GroupBy>>, and there must be
// exactly as many `by` clauses as aggregations. In valid PromQL every `by` belongs to
// one aggregation and an aggregation has at most one, so equal counts mean each
// aggregation has its own conforming `by`.

const (
	groupByMarker = "ebbflow_group_by_marker"
	seriesMarker  = "ebbflow_series_marker"
)

var (
	aggregationRE = regexp.MustCompile(`(?i)\b(sum|min|max|avg|group|stddev|stdvar|count|count_values|bottomk|topk|quantile|limitk|limit_ratio)\s*(\(|by\b|without\b)`)
	byKeywordRE   = regexp.MustCompile(`(?i)\bby\b`)
	byClauseRE    = regexp.MustCompile(`(?i)^by\s*\(([^()]*)\)`)
	forbiddenRE   = regexp.MustCompile(`(?i)` +
		`\b(without|group_left|group_right|scalar|topk|bottomk|quantile|count_values|label_replace|label_join|limitk|limit_ratio)\b` +
		`|\b(absent|sort)\w*` +
		`|\b(vector|on|ignoring)\s*\(`)
)

// groupsByResource reports whether the parsed metricsQuery provably keeps every
// object's samples apart (see above).
func groupsByResource(t *template.Template) bool {
	if t.Tree == nil || t.Tree.Root == nil {
		return false
	}
	var sb strings.Builder
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			sb.Write(n.Text)
		case *parse.ActionNode:
			switch simpleField(n) {
			case "Series":
				sb.WriteString(seriesMarker)
			case "LabelMatchers":
			case "GroupBy":
				sb.WriteString(groupByMarker)
			default:
				return false
			}
		default:
			return false
		}
	}
	code, ok := stripStringsAndComments(sb.String())
	return ok && promQLGroupsBy(code)
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

// promQLGroupsBy applies the lexical rules to PromQL text free of strings and comments.
func promQLGroupsBy(code string) bool {
	if forbiddenRE.MatchString(code) {
		return false
	}
	aggregations := len(aggregationRE.FindAllStringIndex(code, -1))
	bys := byKeywordRE.FindAllStringIndex(code, -1)
	if len(bys) != aggregations {
		return false
	}
	for _, loc := range bys {
		m := byClauseRE.FindStringSubmatch(code[loc[0]:])
		if m == nil || !groupingKeepsResource(m[1]) {
			return false
		}
	}
	return true
}

// groupingKeepsResource reports whether a grouping list is plain label names, one of
// which is the <<.GroupBy>> marker.
func groupingKeepsResource(list string) bool {
	found := false
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		switch {
		case item == groupByMarker:
			found = true
		case !labelNameRE.MatchString(item):
			return false
		}
	}
	return found
}

// stripStringsAndComments replaces every PromQL string literal ("...", '...', `...`) by
// "" and every # comment by a newline. It fails on an unterminated string.
func stripStringsAndComments(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			end := stringEnd(s, i)
			if end < 0 {
				return "", false
			}
			b.WriteString(`""`)
			i = end
		case '#':
			nl := strings.IndexByte(s[i:], '\n')
			if nl < 0 {
				return b.String(), true
			}
			b.WriteByte('\n')
			i += nl
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// stringEnd returns the index of the quote closing the string opened at s[start], or
// -1. Backslash escapes apply except in raw (backquoted) strings.
func stringEnd(s string, start int) int {
	q := s[start]
	for j := start + 1; j < len(s); j++ {
		switch {
		case s[j] == q:
			return j
		case s[j] == '\\' && q != '`':
			j++
		}
	}
	return -1
}
