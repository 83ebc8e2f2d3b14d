// Package dashboards holds Grafana dashboards over ebbflow's self-metrics; this
// test keeps them true to the code.
package dashboards

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// sourceDirs are the trees whose non-test Go files define the components'
// self-metrics.
var sourceDirs = []string{"../adapter", "../autoscaler", "../cmd"}

// TestDashboardMetricsExist fails when a dashboard queries a metric name that
// no component exports: every series selector in every panel's expression must
// name a metric defined in the code (prometheus.*Opts literals, with the
// _bucket/_sum/_count series of histograms and summaries) or one of the Go and
// process collectors' metrics, which the components register.
func TestDashboardMetricsExist(t *testing.T) {
	known, bases := codeMetrics(t)
	addCollectorMetrics(t, known)

	files, err := filepath.Glob("*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found (%v)", err)
	}
	for _, file := range files {
		exprs := dashboardExprs(t, file)
		if len(exprs) < 10 {
			t.Fatalf("%s: only %d panel queries found; is the file a Grafana dashboard?", file, len(exprs))
		}
		used := map[string]bool{}
		for _, e := range exprs {
			names, err := selectorNames(e.expr)
			if err != nil {
				t.Errorf("%s: panel %q: %v", file, e.panel, err)
				continue
			}
			if len(names) == 0 {
				t.Errorf("%s: panel %q: expression selects no metric: %s", file, e.panel, e.expr)
			}
			for _, n := range names {
				used[n] = true
				if !known[n] {
					t.Errorf("%s: panel %q uses %s, which no component exports", file, e.panel, n)
				}
			}
		}
		// Not a failure (new metrics may come before their panel), but say so.
		var unused []string
		for n := range bases {
			if !used[n] && !used[n+"_count"] && !used[n+"_bucket"] && !used[n+"_sum"] {
				unused = append(unused, n)
			}
		}
		sort.Strings(unused)
		if len(unused) > 0 {
			t.Logf("%s: self-metrics without a panel: %s", file, strings.Join(unused, ", "))
		}
	}
}

type panelExpr struct{ panel, expr string }

// dashboardExprs returns the Prometheus expressions of every panel, rows'
// nested panels included.
func dashboardExprs(t *testing.T, file string) []panelExpr {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []panelExpr
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel: %v", file, err)
			}
			for _, tg := range p.Targets {
				out = append(out, panelExpr{p.Title, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	return out
}

var (
	grafanaVar   = regexp.MustCompile(`\$__(rate_interval|interval|range)`)
	groupingList = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifier   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords     = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// selectorNames returns the metric names an expression selects: identifiers
// outside strings, label matchers, ranges and grouping lists that are neither
// functions nor keywords.
func selectorNames(expr string) ([]string, error) {
	s := grafanaVar.ReplaceAllString(expr, "5m")
	s, err := strip(s)
	if err != nil {
		return nil, err
	}
	s = groupingList.ReplaceAllString(s, " ")
	var names []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		word := s[loc[0]:loc[1]]
		if slices.Contains(keywords, strings.ToLower(word)) {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function
		}
		names = append(names, word)
	}
	return names, nil
}

// strip blanks out string literals and the contents of {...} and [...].
func strip(s string) (string, error) {
	var b strings.Builder
	var quote rune
	depth := map[rune]int{}
	closing := map[rune]rune{'}': '{', ']': '['}
	escaped := false
	for _, r := range s {
		switch {
		case quote != 0:
			if escaped {
				escaped = false
			} else if r == '\\' {
				escaped = true
			} else if r == quote {
				quote = 0
			}
			continue
		case r == '"' || r == '\'' || r == '`':
			quote = r
			continue
		case r == '{' || r == '[':
			depth[r]++
			continue
		case r == '}' || r == ']':
			if depth[closing[r]] == 0 {
				return "", fmt.Errorf("unbalanced %q in %s", r, s)
			}
			depth[closing[r]]--
			b.WriteRune(' ')
			continue
		}
		if depth['{'] > 0 || depth['['] > 0 {
			continue
		}
		b.WriteRune(r)
	}
	if quote != 0 || depth['{'] != 0 || depth['['] != 0 {
		return "", fmt.Errorf("unterminated string or bracket in %s", s)
	}
	return b.String(), nil
}

// codeMetrics collects the fully qualified names of every metric defined by a
// prometheus (or component-base) *Opts literal in the components' code.
// It returns every series name and, separately, the metric names themselves.
func codeMetrics(t *testing.T) (known, bases map[string]bool) {
	t.Helper()
	known, bases = map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range sourceDirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, m := range fileMetrics(f) {
				known[m.name] = true
				bases[m.name] = true
				for _, suffix := range m.suffixes {
					known[m.name+suffix] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("scanning %s: %v", dir, err)
		}
	}
	for _, want := range []string{"ebbflow_adapter_api_request_duration_seconds", "ebbflow_autoscaler_evaluation_lag_seconds"} {
		if !known[want] {
			t.Fatalf("the code scan missed %s (found %d names): fix codeMetrics", want, len(known))
		}
	}
	return known, bases
}

type metricDef struct {
	name     string
	suffixes []string
}

// fileMetrics finds *Opts literals in f whose Namespace, Subsystem and Name
// are string literals or constants declared in the same file.
func fileMetrics(f *ast.File) []metricDef {
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok {
			for i, name := range spec.Names {
				if i < len(spec.Values) {
					if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, err := strconv.Unquote(lit.Value); err == nil {
							consts[name.Name] = v
						}
					}
				}
			}
		}
		return true
	})
	value := func(e ast.Expr) (string, bool) {
		switch v := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(v.Value)
			return s, err == nil
		case *ast.Ident:
			s, ok := consts[v.Name]
			return s, ok
		}
		return "", false
	}
	var out []metricDef
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		sel, ok := lit.Type.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		var suffixes []string
		switch sel.Sel.Name {
		case "CounterOpts", "GaugeOpts":
		case "HistogramOpts":
			suffixes = []string{"_bucket", "_sum", "_count"}
		case "SummaryOpts":
			suffixes = []string{"_sum", "_count"}
		default:
			return true
		}
		parts := map[string]string{}
		for _, el := range lit.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, ok := kv.Key.(*ast.Ident)
			if !ok {
				continue
			}
			if v, ok := value(kv.Value); ok {
				parts[key.Name] = v
			}
		}
		if parts["Name"] != "" {
			out = append(out, metricDef{prometheus.BuildFQName(parts["Namespace"], parts["Subsystem"], parts["Name"]), suffixes})
		}
		return true
	})
	return out
}

// addCollectorMetrics adds the names described by the Go and process
// collectors both components register (client_golang's, as the autoscaler's
// registry and component-base's legacy registry of the adapter use).
func addCollectorMetrics(t *testing.T, known map[string]bool) {
	t.Helper()
	descs := make(chan *prometheus.Desc, 256)
	go func() {
		collectors.NewGoCollector().Describe(descs)
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}).Describe(descs)
		close(descs)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			known[m[1]] = true
			n++
		}
	}
	if n == 0 {
		t.Fatal("no Go or process collector metrics described")
	}
}

func TestSelectorNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (le, group) (rate(a_bucket{namespace=~"$namespace",x="}"}[$__rate_interval]))`, []string{"a_bucket"}},
		{`histogram_quantile(0.99, sum by (le) (rate(b_bucket[5m]))) / on (pod) group_left c`, []string{"b_bucket", "c"}},
		{`time() - max by (pod) (d{a="b"}) > 1e3 and bool e offset 5m`, []string{"d", "e"}},
		{`rate (f [1m])`, []string{"f"}},
	} {
		got, err := selectorNames(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
		} else if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.expr, got, tc.want)
		}
	}
	for _, bad := range []string{`a{b="c"`, `a]`, `a{b="c}`} {
		if _, err := selectorNames(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
