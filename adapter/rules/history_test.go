package rules

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func historyRule(t testing.TB) *Rule {
	t.Helper()
	r, err := Compile(rulefile.DiscoveryRule{
		Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
		MetricsQuery: `sum by (job) (rate(<<.Series>>{<<.LabelMatchers>>}[2m]))`,
	}, 0, External, testMapper())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

func historySelector(kv ...string) labels.Selector {
	set := labels.Set{}
	for i := 0; i+1 < len(kv); i += 2 {
		set[kv[i]] = kv[i+1]
	}
	// Not validated: the hostile values reach SplitHistory as they are.
	return labels.SelectorFromValidatedSet(set)
}

func TestSplitHistory(t *testing.T) {
	long := strings.Repeat("1", 200) + "s"
	for _, tc := range []struct {
		name    string
		sel     labels.Selector
		want    *HistoryRequest
		rest    string
		wantErr string // substring naming the requirement
	}{
		{name: "none", sel: historySelector("app", "web"), rest: "app=web"},
		{name: "week at 5m", sel: historySelector("app", "web", HistoryRangeLabel, "7d", HistoryStepLabel, "5m"),
			want: &HistoryRequest{Range: 7 * 24 * time.Hour, Step: 5 * time.Minute}, rest: "app=web"},
		{name: "compound", sel: historySelector(HistoryRangeLabel, "4d1h", HistoryStepLabel, "1m30s"),
			want: &HistoryRequest{Range: 97 * time.Hour, Step: 90 * time.Second}, rest: ""},
		{name: "range alone", sel: historySelector(HistoryRangeLabel, "7d"), wantErr: "needs both"},
		{name: "step alone", sel: historySelector(HistoryStepLabel, "5m"), wantErr: "needs both"},
		{name: "unknown reserved key", sel: historySelector("history.ebbflow.dev/query", "x", HistoryRangeLabel, "7d", HistoryStepLabel, "5m"), wantErr: "history.ebbflow.dev/query"},
		{name: "quote", sel: historySelector(HistoryRangeLabel, `7d"`, HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "brace", sel: historySelector(HistoryRangeLabel, "7d", HistoryStepLabel, "5m]}"), wantErr: HistoryStepLabel},
		{name: "or", sel: historySelector(HistoryRangeLabel, "7d or vector(1)", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "subquery in value", sel: historySelector(HistoryRangeLabel, "7d:1s]", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "long", sel: historySelector(HistoryRangeLabel, long, HistoryStepLabel, "5m"), wantErr: "bytes"},
		{name: "empty", sel: historySelector(HistoryRangeLabel, "", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "zero", sel: historySelector(HistoryRangeLabel, "0s", HistoryStepLabel, "5m"), wantErr: "positive"},
		{name: "negative", sel: historySelector(HistoryRangeLabel, "-1h", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "fraction", sel: historySelector(HistoryRangeLabel, "1.5h", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "space", sel: historySelector(HistoryRangeLabel, "7 d", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "Go unit", sel: historySelector(HistoryRangeLabel, "5µs", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "upper case", sel: historySelector(HistoryRangeLabel, "7D", HistoryStepLabel, "5m"), wantErr: HistoryRangeLabel},
		{name: "too long a range", sel: historySelector(HistoryRangeLabel, "6w", HistoryStepLabel, "1h"), wantErr: "longer than 5w"},
		{name: "too short a step", sel: historySelector(HistoryRangeLabel, "1h", HistoryStepLabel, "10s"), wantErr: "shorter than 30s"},
		{name: "step over range", sel: historySelector(HistoryRangeLabel, "1m", HistoryStepLabel, "5m"), wantErr: "shorter than the step"},
		{name: "too many points", sel: historySelector(HistoryRangeLabel, "7d", HistoryStepLabel, "30s"), wantErr: "20161 points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, h, err := SplitHistory(tc.sel)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrBadSelector) || !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a bad history naming %q", err, tc.wantErr)
				}
				if len(err.Error()) > 400 {
					t.Fatalf("error of %d bytes", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (h == nil) != (tc.want == nil) || (h != nil && *h != *tc.want) {
				t.Fatalf("history %+v, want %+v", h, tc.want)
			}
			if rest.String() != tc.rest {
				t.Fatalf("rest %q, want %q", rest, tc.rest)
			}
		})
	}
}

func TestSplitHistoryOperators(t *testing.T) {
	for _, s := range []string{
		HistoryRangeLabel + "!=7d," + HistoryStepLabel + "=5m",
		HistoryRangeLabel + " in (7d,6d)," + HistoryStepLabel + "=5m",
		HistoryRangeLabel + "," + HistoryStepLabel + "=5m",
		"!" + HistoryRangeLabel + "," + HistoryStepLabel + "=5m",
	} {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := SplitHistory(sel); !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), HistoryRangeLabel) {
			t.Errorf("%s: error %v, want one naming %s", s, err, HistoryRangeLabel)
		}
	}
	sel, _ := labels.Parse(HistoryRangeLabel + " in (7d)," + HistoryStepLabel + "==5m")
	if _, h, err := SplitHistory(sel); err != nil || h == nil || h.Range != 7*24*time.Hour {
		t.Fatalf("in with one value: %v %v", h, err)
	}
}

func TestHistorySubquery(t *testing.T) {
	r := historyRule(t)
	sel := historySelector("app", `a"} or vector(1) or x{b="`, HistoryRangeLabel, "7d", HistoryStepLabel, "5m")
	rest, h, err := SplitHistory(sel)
	if err != nil {
		t.Fatal(err)
	}
	q, err := r.ExternalQuery("http_requests_total", "ns", rest)
	if err != nil {
		t.Fatal(err)
	}
	sq, err := h.Subquery(q)
	if err != nil {
		t.Fatal(err)
	}
	want := `(sum by (job) (rate(http_requests_total{app="a\"} or vector(1) or x{b=\"",namespace="ns"}[2m])))[1w:5m]`
	if sq != want {
		t.Fatalf("subquery\n%s\nwant\n%s", sq, want)
	}
	checkSubquery(t, q, sq, *h)
	// A scalar query becomes a vector first; a range vector is refused.
	if sq, err := h.Subquery("1"); err != nil || sq != "(vector(1))[1w:5m]" {
		t.Fatalf("scalar: %q %v", sq, err)
	}
	if _, err := h.Subquery("m[5m]"); err == nil {
		t.Fatal("range vector accepted")
	}
	if _, err := h.Subquery("sum(("); err == nil {
		t.Fatal("query that does not parse accepted")
	}
	if _, err := (HistoryRequest{Range: time.Hour, Step: time.Second}).Subquery("m"); !errors.Is(err, ErrBadHistory) {
		t.Fatalf("unbounded history: %v", err)
	}
}

// parseSubquery parses sq and asserts it is one subquery of h's range and
// step, with no offset or @ modifier.
func parseSubquery(t *testing.T, sq string, h HistoryRequest) *parser.SubqueryExpr {
	t.Helper()
	expr, err := rulefile.ParsePromQL(sq)
	if err != nil {
		t.Fatalf("subquery %q does not parse: %v", sq, err)
	}
	sub, ok := expr.(*parser.SubqueryExpr)
	if !ok || sub.Range != h.Range || sub.Step != h.Step || sub.Offset != 0 || sub.Timestamp != nil {
		t.Fatalf("subquery %q: %T %+v, want [%v:%v]", sq, expr, expr, h.Range, h.Step)
	}
	return sub
}

// checkSubquery asserts that sq is exactly the subquery of q: one
// SubqueryExpr at the top, h's range and step, q's tree inside.
func checkSubquery(t *testing.T, q, sq string, h HistoryRequest) {
	t.Helper()
	sub := parseSubquery(t, sq, h)
	inner, err := rulefile.ParsePromQL(q)
	if err != nil {
		t.Fatal(err)
	}
	paren, ok := sub.Expr.(*parser.ParenExpr)
	if !ok {
		t.Fatalf("subquery %q: inner %T, want parentheses", sq, sub.Expr)
	}
	if got := paren.Expr; got.String() != inner.String() {
		t.Fatalf("inner query %q, want %q", got, inner)
	}
}

// FuzzHistorySelector splits selectors with arbitrary reserved values and
// an arbitrary ordinary value: a history is either refused with a bad
// history error or within the bounds, and its subquery has the rule's query
// inside one subquery whatever the values.
func FuzzHistorySelector(f *testing.F) {
	f.Add("7d", "5m", "web")
	f.Add("4d1h", "1m", `a"} or vector(1) or x{b="`)
	f.Add("1w", "30s", "x")
	f.Add("7d]", "5m", "")
	for _, v := range hostileValues {
		f.Add(v, "5m", v)
		f.Add("1h", v, "a")
	}
	r := historyRule(f)
	f.Fuzz(func(t *testing.T, rangeV, stepV, other string) {
		rest, h, err := SplitHistory(historySelector("app", other, HistoryRangeLabel, rangeV, HistoryStepLabel, stepV))
		if err != nil {
			if !errors.Is(err, ErrBadHistory) {
				t.Fatalf("error %v is not a bad history", err)
			}
			return
		}
		if h == nil || h.Step < MinHistoryStep || h.Range > MaxHistoryRange || h.Points() > MaxHistoryPoints || h.Range < h.Step {
			t.Fatalf("%q %q accepted as %+v", rangeV, stepV, h)
		}
		if !historyDurationRE.MatchString(rangeV) || !historyDurationRE.MatchString(stepV) {
			t.Fatalf("%q %q accepted outside the duration syntax", rangeV, stepV)
		}
		q, err := r.ExternalQuery("m", "ns", rest)
		if err != nil {
			if errors.Is(err, ErrBadSelector) {
				return // the ordinary value was refused as usual
			}
			t.Fatal(err)
		}
		sq, err := h.Subquery(q)
		if err != nil {
			t.Fatal(err)
		}
		checkSubquery(t, q, sq, *h)
	})
}

// podsHistoryRule is prometheus-adapter's usual Pods rule: a rate per pod.
func podsHistoryRule(t testing.TB, query string) *Rule {
	t.Helper()
	r, err := Compile(rulefile.DiscoveryRule{
		Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
		MetricsQuery: query,
	}, 0, Custom, testMapper())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

const podsRateQuery = `sum(rate(<<.Series>>{<<.LabelMatchers>>}[2m])) by (<<.GroupBy>>)`

func TestSplitPodsHistory(t *testing.T) {
	week := []string{HistoryRangeLabel, "7d", HistoryStepLabel, "1m"}
	for _, tc := range []struct {
		name    string
		kv      []string
		want    WorkloadPods
		wantErr string
	}{
		{name: "deployment", kv: []string{HistoryDeploymentPodsLabel, "web"}, want: WorkloadPods{HistoryDeploymentPodsLabel, "web"}},
		{name: "statefulset with a dot", kv: []string{HistoryStatefulSetPodsLabel, "db.v2"}, want: WorkloadPods{HistoryStatefulSetPodsLabel, "db.v2"}},
		{name: "replicaset", kv: []string{HistoryReplicaSetPodsLabel, "web-7c5d"}, want: WorkloadPods{HistoryReplicaSetPodsLabel, "web-7c5d"}},
		{name: "two workloads", kv: []string{HistoryDeploymentPodsLabel, "web", HistoryStatefulSetPodsLabel, "web"}, wantErr: "names one workload"},
		{name: "quote", kv: []string{HistoryDeploymentPodsLabel, `web"`}, wantErr: HistoryDeploymentPodsLabel},
		{name: "regex", kv: []string{HistoryDeploymentPodsLabel, `.*`}, wantErr: "not a workload name"},
		{name: "alternation", kv: []string{HistoryDeploymentPodsLabel, `web|db`}, wantErr: "not a workload name"},
		{name: "upper case", kv: []string{HistoryDeploymentPodsLabel, "Web"}, wantErr: "not a workload name"},
		{name: "underscore", kv: []string{HistoryDeploymentPodsLabel, "web_1"}, wantErr: "not a workload name"},
		{name: "trailing dash", kv: []string{HistoryDeploymentPodsLabel, "web-"}, wantErr: "not a workload name"},
		{name: "empty", kv: []string{HistoryDeploymentPodsLabel, ""}, wantErr: "not a workload name"},
		{name: "long", kv: []string{HistoryDeploymentPodsLabel, strings.Repeat("a", 64)}, wantErr: "64 bytes"},
		{name: "unknown shape", kv: []string{"history.ebbflow.dev/daemonset-pods", "web"}, wantErr: "history.ebbflow.dev/daemonset-pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, h, err := SplitHistory(historySelector(append(append([]string{"code", "200"}, week...), tc.kv...)...))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a bad history naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Pods != tc.want || h.Range != 7*24*time.Hour || h.Step != time.Minute || rest.String() != "code=200" {
				t.Fatalf("history %+v rest %q, want %+v", h, rest, tc.want)
			}
		})
	}
	// The workload alone is not a history.
	if _, _, err := SplitHistory(historySelector(HistoryDeploymentPodsLabel, "web")); !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), "needs both") {
		t.Fatalf("workload without range and step: %v", err)
	}
	for _, s := range []string{HistoryDeploymentPodsLabel + "!=web", HistoryDeploymentPodsLabel + " in (web,db)", HistoryDeploymentPodsLabel} {
		sel := mustParse(t, s+","+HistoryRangeLabel+"=1d,"+HistoryStepLabel+"=1m")
		if _, _, err := SplitHistory(sel); !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), HistoryDeploymentPodsLabel) {
			t.Errorf("%s: error %v, want one naming %s", s, err, HistoryDeploymentPodsLabel)
		}
	}
}

// TestWorkloadPodsPattern: each shape matches its workload's pod names,
// past rollouts included, and no other workload's.
func TestWorkloadPodsPattern(t *testing.T) {
	for _, tc := range []struct {
		w          WorkloadPods
		match, not []string
	}{
		{WorkloadPods{HistoryDeploymentPodsLabel, "web"},
			[]string{"web-7c5ddbdf54-x2kzq", "web-b-bbbbb", "web-6d4cf56db6-9xv8w"},
			[]string{"web", "web-0", "web-x2kzq", "web-api-7c5ddbdf54-x2kzq", "web-7c5ddbdf54-x2kz", "web-7c5ddbdf541-x2kzq", "xweb-7c5ddbdf54-x2kzq", "web-7c5ddbdf54-x2kzq-1", "web-7C5DDBDF54-X2KZQ", "web-abcde-fghjk"}},
		{WorkloadPods{HistoryStatefulSetPodsLabel, "db.v2"},
			[]string{"db.v2-0", "db.v2-17"},
			[]string{"dbxv2-0", "db.v2-01", "db.v2-", "db.v2-0-x2kzq", "db.v2-web-0"}},
		{WorkloadPods{HistoryReplicaSetPodsLabel, "web-7c5d"},
			[]string{"web-7c5d-x2kzq"},
			[]string{"web-7c5d-x2kzq2", "web-7c5d-7c5d-x2kzq", "web-7c5d"}},
	} {
		re := regexp.MustCompile("^(?:" + tc.w.Pattern() + ")$")
		for _, n := range tc.match {
			if !re.MatchString(n) {
				t.Errorf("%+v: %q not matched by %s", tc.w, n, tc.w.Pattern())
			}
		}
		for _, n := range tc.not {
			if re.MatchString(n) {
				t.Errorf("%+v: %q matched by %s", tc.w, n, tc.w.Pattern())
			}
		}
	}
}

func TestPodsHistoryQuery(t *testing.T) {
	r := podsHistoryRule(t, podsRateQuery)
	sel := historySelector("code", `a"} or vector(1) or x{b="`, HistoryRangeLabel, "4d1h", HistoryStepLabel, "1m", HistoryDeploymentPodsLabel, "web.v2")
	rest, h, err := SplitHistory(sel)
	if err != nil {
		t.Fatal(err)
	}
	req := CustomRequest{Series: "http_requests_total", Namespace: "ns", Resource: podsGR, MetricSelector: rest}
	sq, err := r.PodsHistoryQuery(req, *h)
	if err != nil {
		t.Fatal(err)
	}
	want := `(sum(sum by (pod) (rate(http_requests_total{code="a\"} or vector(1) or x{b=\"",namespace="ns",pod=~"web\\.v2-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}"}[2m]))))[4d1h:1m]`
	if sq != want {
		t.Fatalf("subquery\n%s\nwant\n%s", sq, want)
	}
	checkPodsSubquery(t, sq, *h, "ns")

	// LabelValuesByName carries the pattern too.
	byValues := podsHistoryRule(t, `sum(rate(<<.Series>>{namespace="<<index .LabelValuesByName "namespace">>",pod=~"<<index .LabelValuesByName "pod">>"}[2m])) by (pod)`)
	if sq, err := byValues.PodsHistoryQuery(req, *h); err != nil {
		t.Fatal(err)
	} else {
		checkPodsSubquery(t, sq, *h, "ns")
	}

	// A query that does not select the workload's pods, or not in the
	// namespace, would sum other pods: refused.
	for _, q := range []string{
		`sum(rate(<<.Series>>[2m])) by (pod)`,
		`sum(rate(<<.Series>>{pod=~"<<index .LabelValuesByName "pod">>"}[2m])) by (pod)`,
		`sum(rate(<<.Series>>{namespace="ns"}[2m])) by (pod) or sum(rate(<<.Series>>{pod=~"<<index .LabelValuesByName "pod">>"}[2m])) by (pod)`,
	} {
		if _, err := podsHistoryRule(t, q).PodsHistoryQuery(req, *h); err == nil || !strings.Contains(err.Error(), "cannot answer a Pods metric's history") {
			t.Errorf("%s: error %v, want a refusal", q, err)
		}
	}
	// Only for the pods of a namespace, only with a workload.
	for name, bad := range map[string]CustomRequest{
		"names":        {Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"web-1"}},
		"no namespace": {Series: "m", Resource: podsGR},
		"services":     {Series: "m", Namespace: "ns", Resource: servicesGR},
		"bad series":   {Series: "m{}", Namespace: "ns", Resource: podsGR},
	} {
		if _, err := r.PodsHistoryQuery(bad, *h); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := r.PodsHistoryQuery(req, HistoryRequest{Range: time.Hour, Step: time.Minute}); err == nil {
		t.Error("history without a workload accepted")
	}
	if _, err := r.PodsHistoryQuery(req, HistoryRequest{Range: time.Hour, Step: time.Second, Pods: h.Pods}); !errors.Is(err, ErrBadHistory) {
		t.Errorf("unbounded history: %v", err)
	}
}

// checkPodsSubquery asserts that sq is one subquery of h's range and step
// over sum(...) whose series selectors all hold namespace=ns and the
// workload's pattern on pod.
func checkPodsSubquery(t *testing.T, sq string, h HistoryRequest, ns string) {
	t.Helper()
	sub := parseSubquery(t, sq, h)
	paren, ok := sub.Expr.(*parser.ParenExpr)
	if !ok {
		t.Fatalf("subquery %q: inner %T, want parentheses", sq, sub.Expr)
	}
	agg, ok := paren.Expr.(*parser.AggregateExpr)
	if !ok || agg.Op != parser.SUM || len(agg.Grouping) != 0 || agg.Without {
		t.Fatalf("subquery %q: inner %s, want sum(...)", sq, paren.Expr)
	}
	n := 0
	parser.Inspect(agg.Expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		n++
		var pods, nsOK bool
		for _, m := range vs.LabelMatchers {
			pods = pods || (m.Name == "pod" && m.Value == h.Pods.Pattern())
			nsOK = nsOK || (m.Name == "namespace" && m.Value == ns)
		}
		if !pods || !nsOK {
			t.Fatalf("subquery %q: selector %s without the workload's pods in %s", sq, vs, ns)
		}
		return nil
	})
	if n == 0 {
		t.Fatalf("subquery %q selects no series", sq)
	}
}

// FuzzPodsHistorySelector splits selectors with an arbitrary workload
// name and an arbitrary ordinary value: the name is refused with a bad
// history error or is a workload name, and the query is one subquery of a
// sum whose series selectors all select the workload's pods in the
// namespace, whatever the values.
func FuzzPodsHistorySelector(f *testing.F) {
	f.Add("web", "200", "ns")
	f.Add("web.v2", `a"} or vector(1) or x{b="`, "ns")
	f.Add(`web"}`, "x", `ns"} or vector(1)`)
	f.Add(".*", "", "default")
	for _, v := range hostileValues {
		f.Add(v, v, "ns")
		f.Add("web", "a", v)
	}
	r := podsHistoryRule(f, podsRateQuery)
	f.Fuzz(func(t *testing.T, name, other, ns string) {
		for _, shape := range []string{HistoryDeploymentPodsLabel, HistoryStatefulSetPodsLabel, HistoryReplicaSetPodsLabel} {
			rest, h, err := SplitHistory(historySelector("code", other, HistoryRangeLabel, "1d", HistoryStepLabel, "1m", shape, name))
			if err != nil {
				if !errors.Is(err, ErrBadHistory) {
					t.Fatalf("error %v is not a bad history", err)
				}
				continue
			}
			if h.Pods.Name != name || h.Pods.Shape != shape || !workloadNameRE.MatchString(name) {
				t.Fatalf("%q accepted as %+v", name, h.Pods)
			}
			if ns == "" {
				continue
			}
			sq, err := r.PodsHistoryQuery(CustomRequest{Series: "m", Namespace: ns, Resource: podsGR, MetricSelector: rest}, *h)
			if err != nil {
				if errors.Is(err, ErrBadSelector) {
					continue // the ordinary value was refused as usual
				}
				t.Fatal(err)
			}
			checkPodsSubquery(t, sq, *h, ns)
		}
	})
}
