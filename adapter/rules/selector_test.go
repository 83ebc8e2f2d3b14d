package rules

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// labelSelectorOf is the API form of sel through ParseSelector.
func labelSelectorOf(sel labels.Selector) (*metav1.LabelSelector, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	return s.LabelSelector()
}

// TestLabelSelectorOf checks that the API form of every operator a rule can express
// selects exactly what the request's selector selects.
func TestLabelSelectorOf(t *testing.T) {
	selectors := []string{
		"code=200", "code==200", "code!=200", "code in (200,404)", "code notin (500)",
		"code notin (500,503)", "code", "!code", "code!=200,method=GET", "code=200,code=404",
		"code in (200),!method", "a=b,c!=d,e in (f,g),h notin (i),j,!k",
	}
	labelSets := []labels.Set{
		{}, {"code": "200"}, {"code": "404"}, {"code": "500"}, {"code": "503"},
		{"code": "200", "method": "GET"}, {"code": "500", "method": "GET"}, {"method": "POST"},
		{"a": "b", "e": "f", "j": "x"}, {"a": "b", "c": "d", "e": "g", "j": ""},
		{"a": "b", "e": "g", "h": "i", "j": "y"}, {"a": "b", "e": "f", "j": "y", "k": "z"},
	}
	for _, s := range selectors {
		t.Run(s, func(t *testing.T) {
			sel, err := labels.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := labelSelectorOf(sel)
			if err != nil {
				t.Fatalf("labelSelectorOf: %v", err)
			}
			back, err := metav1.LabelSelectorAsSelector(ls)
			if err != nil {
				t.Fatalf("the API form %+v is invalid: %v", ls, err)
			}
			for _, set := range labelSets {
				if got, want := back.Matches(set), sel.Matches(set); got != want {
					t.Errorf("%v: API form %q matches %v, request selector %v", set, back, got, want)
				}
			}
		})
	}
}

func TestLabelSelectorOfNotEquals(t *testing.T) {
	ls, err := labelSelectorOf(labels.SelectorFromSet(nil).Add(mustRequirement(t, "code!=200")...))
	if err != nil {
		t.Fatal(err)
	}
	want := metav1.LabelSelectorRequirement{Key: "code", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"200"}}
	if len(ls.MatchExpressions) != 1 || ls.MatchLabels != nil || ls.MatchExpressions[0].Key != want.Key ||
		ls.MatchExpressions[0].Operator != want.Operator || len(ls.MatchExpressions[0].Values) != 1 || ls.MatchExpressions[0].Values[0] != "200" {
		t.Errorf("code!=200 became %+v, want %+v", ls, want)
	}
}

func TestLabelSelectorOfRefusesGreaterThan(t *testing.T) {
	if _, err := labelSelectorOf(labels.SelectorFromSet(nil).Add(mustRequirement(t, "code>200")...)); err == nil {
		t.Error("gt converted without error")
	}
}

func mustRequirement(t *testing.T, s string) []labels.Requirement {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := sel.Requirements()
	return reqs
}

// FuzzParseSelector: for any selector the API accepts, ParseSelector keeps its size
// bound, and its API form (when it has one) selects what the request's selector
// selects; a query rendered from the parsed selector equals one rendered from the
// selector itself.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"", "code=200", "code!=200,method in (GET,POST)", "a,!b", "x notin (1,2)", "k=a,k=b", "n>1"} {
		f.Add(s)
	}
	r := securityRule(f)
	sets := []labels.Set{{}, {"code": "200"}, {"code": "500", "method": "GET"}, {"a": "1"}, {"b": "2", "x": "1"}, {"k": "a"}}
	f.Fuzz(func(t *testing.T, text string) {
		sel, err := labels.Parse(text)
		if err != nil {
			return
		}
		parsed, err := ParseSelector(sel)
		if len(sel.String()) > MaxSelectorLength {
			if !errors.Is(err, ErrBadSelector) {
				t.Fatalf("%d bytes: err %v, want ErrBadSelector", len(sel.String()), err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseSelector(%q): %v", text, err)
		}
		req := CustomRequest{Series: "m", Namespace: "ns", Resource: podsGR, Names: []string{"p"}}
		req.MetricSelector = sel
		want, wantErr := r.CustomQuery(req)
		req.MetricSelector = parsed
		got, gotErr := r.CustomQuery(req)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: parsed renders %q, %v; the selector %q, %v", text, got, gotErr, want, wantErr)
		}
		ls, err := parsed.LabelSelector()
		if err != nil {
			if !errors.Is(err, ErrBadSelector) {
				t.Fatalf("LabelSelector(%q): %v, not ErrBadSelector", text, err)
			}
			return
		}
		if ls == nil { // no selector named in the answer
			if !sel.Empty() {
				t.Fatalf("%q has requirements but no API form", text)
			}
			return
		}
		back, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatalf("%q: API form %+v invalid: %v", text, ls, err)
		}
		for _, set := range sets {
			if back.Matches(set) != sel.Matches(set) {
				t.Errorf("%q on %v: API form %q matches %v, the selector %v", text, set, back, back.Matches(set), sel.Matches(set))
			}
		}
	})
}
