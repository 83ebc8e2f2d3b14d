package rules

import (
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
