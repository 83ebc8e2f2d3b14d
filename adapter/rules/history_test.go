package rules

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/adapter/config"
)

func historyRule(t testing.TB) *Rule {
	t.Helper()
	r, err := Compile(config.DiscoveryRule{
		Resources:    config.ResourceMapping{Template: "<<.Resource>>"},
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
		want    *History
		rest    string
		wantErr string // substring naming the requirement
	}{
		{name: "none", sel: historySelector("app", "web"), rest: "app=web"},
		{name: "week at 5m", sel: historySelector("app", "web", HistoryRangeLabel, "7d", HistoryStepLabel, "5m"),
			want: &History{Range: 7 * 24 * time.Hour, Step: 5 * time.Minute}, rest: "app=web"},
		{name: "compound", sel: historySelector(HistoryRangeLabel, "4d1h", HistoryStepLabel, "1m30s"),
			want: &History{Range: 97 * time.Hour, Step: 90 * time.Second}, rest: ""},
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
	if _, err := (History{Range: time.Hour, Step: time.Second}).Subquery("m"); !errors.Is(err, ErrBadHistory) {
		t.Fatalf("unbounded history: %v", err)
	}
}

// checkSubquery asserts that sq is exactly the subquery of q: one
// SubqueryExpr at the top, h's range and step, q's tree inside.
func checkSubquery(t *testing.T, q, sq string, h History) {
	t.Helper()
	expr, err := config.ParsePromQL(sq)
	if err != nil {
		t.Fatalf("subquery %q does not parse: %v", sq, err)
	}
	sub, ok := expr.(*parser.SubqueryExpr)
	if !ok || sub.Range != h.Range || sub.Step != h.Step || sub.Offset != 0 || sub.Timestamp != nil {
		t.Fatalf("subquery %q: %T %+v, want [%v:%v]", sq, expr, expr, h.Range, h.Step)
	}
	inner, err := config.ParsePromQL(q)
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
