package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// requirement is one metric-selector requirement, detached from labels.Requirement so
// that any bytes can be rendered (and fuzzed): labels.NewRequirement validates values.
type requirement struct {
	name   string
	op     selection.Operator
	values []string // sorted, as labels.Requirement.Values().List() returns them
}

// matcher is one PromQL label matcher; value is unquoted and unescaped.
type matcher struct {
	name  string
	op    string // =, !=, =~ or !~
	value string
}

// String renders the matcher; the value is quoted so it cannot end its string early.
func (m matcher) String() string {
	return m.name + m.op + quote(m.value)
}

// quote returns s as a PromQL double-quoted string literal. strconv.Quote emits only
// escapes PromQL accepts and PromQL unquotes with strconv.Unquote: s is kept exactly.
func quote(s string) string {
	return strconv.Quote(s)
}

// escape returns s escaped for use between the quotes of a PromQL "..." or '...'
// string: quote(s) without its quotes, with ' written as \x27 (an escape both string
// forms accept). It equals s for any s free of quotes, backslashes and unprintable or
// invalid characters. It is not safe inside a raw `...` string, where nothing is.
func escape(s string) string {
	q := quote(s)
	return strings.ReplaceAll(q[1:len(q)-1], "'", `\x27`)
}

// toMatcher maps a selector requirement to a PromQL matcher, as prometheus-adapter does:
// = and == → =, != → !=, in → =~"a|b", notin → !~"a|b", exists → !="", does-not-exist
// → ="". Values of in and notin are joined with | unescaped, so a single value passes
// through as a regex. Several values for = or != become =~ or !~. Errors (label name not
// a Prometheus label name, gt/lt or other operators, wrong number of values) wrap
// ErrBadSelector.
func toMatcher(r requirement) (matcher, error) {
	if !labelNameRE.MatchString(r.name) {
		return matcher{}, fmt.Errorf("%w: label name %q is not a Prometheus label name", ErrBadSelector, r.name)
	}
	joined := strings.Join(r.values, "|")
	n := len(r.values)
	var op string
	switch r.op {
	case selection.Equals, selection.DoubleEquals:
		op = pick(n == 1, "=", "=~")
	case selection.NotEquals:
		op = pick(n == 1, "!=", "!~")
	case selection.In:
		op = "=~"
	case selection.NotIn:
		op = "!~"
	case selection.Exists:
		op = "!="
	case selection.DoesNotExist:
		op = "="
	default:
		return matcher{}, fmt.Errorf("%w: unsupported operator %q on label %q", ErrBadSelector, r.op, r.name)
	}
	valueless := r.op == selection.Exists || r.op == selection.DoesNotExist
	if valueless != (n == 0) {
		return matcher{}, fmt.Errorf("%w: operator %q on label %q with %d values", ErrBadSelector, r.op, r.name, n)
	}
	return matcher{name: r.name, op: op, value: joined}, nil
}

// pick returns a when cond holds, else b.
func pick(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

// resourceMatcher selects the objects by name on the resource label: ="a" for one name,
// =~"a|b" for several (each name regexp.QuoteMeta-escaped, so names match literally),
// !="" for none (every object).
func resourceMatcher(label string, names []string) (matcher, error) {
	for _, n := range names {
		if n == "" {
			return matcher{}, errors.New("empty object name")
		}
	}
	switch len(names) {
	case 0:
		return matcher{name: label, op: "!=", value: ""}, nil
	case 1:
		return matcher{name: label, op: "=", value: names[0]}, nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return matcher{name: label, op: "=~", value: strings.Join(quoted, "|")}, nil
}

// matcherSet accumulates the LabelMatchers and LabelValuesByName of a query.
type matcherSet struct {
	exprs  []string
	values map[string]string
}

func newMatcherSet() *matcherSet {
	return &matcherSet{values: map[string]string{}}
}

// add appends m; rawValues (unescaped) is what LabelValuesByName shows for m's label,
// replacing what an earlier matcher on the same label put there.
func (s *matcherSet) add(m matcher, rawValues string) {
	s.exprs = append(s.exprs, m.String())
	s.values[m.name] = escape(rawValues)
}

// addRequirements adds the matchers of a metric label selector.
func (s *matcherSet) addRequirements(reqs []requirement) error {
	for _, r := range reqs {
		m, err := toMatcher(r)
		if err != nil {
			return err
		}
		s.add(m, strings.Join(r.values, "|"))
	}
	return nil
}

// Selector is a request's metric label selector, checked and walked once
// (ParseSelector): queries rendered with it reuse its requirements, and answers
// name it by LabelSelector without walking the request's selector again. It is a
// labels.Selector itself, so it goes wherever one is expected (CustomRequest,
// ExternalQuery).
type Selector struct {
	labels.Selector
	reqs []requirement
}

// ParseSelector checks sel's size and takes its requirements. A nil selector has
// none. Errors wrap ErrBadSelector; a requirement no query can express (a label
// name that is not a Prometheus one, gt, lt) fails later, when a query is rendered.
func ParseSelector(sel labels.Selector) (*Selector, error) {
	if s, ok := sel.(*Selector); ok {
		return s, nil
	}
	if sel == nil {
		return &Selector{Selector: labels.Everything()}, nil
	}
	if n := len(sel.String()); n > MaxSelectorLength {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadSelector, n, MaxSelectorLength)
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return nil, fmt.Errorf("%w: selects nothing", ErrBadSelector)
	}
	s := &Selector{Selector: sel, reqs: make([]requirement, 0, len(reqs))}
	for i := range reqs {
		s.reqs = append(s.reqs, requirement{
			name:   reqs[i].Key(),
			op:     reqs[i].Operator(),
			values: reqs[i].Values().List(),
		})
	}
	return s, nil
}

// selectorRequirements returns the requirements of sel, parsing it unless it is
// a *Selector already. Errors wrap ErrBadSelector.
func selectorRequirements(sel labels.Selector) ([]requirement, error) {
	s, err := ParseSelector(sel)
	if err != nil {
		return nil, err
	}
	return s.reqs, nil
}

// LabelSelector is the selector in the API's form, which answers carry; nil when it
// has no requirement. The API has no "!=": a != v becomes "a notin (v)", which means
// the same (a series without the label matches both). = and == become matchLabels
// (two different values for one label become In requirements); in, notin, exists
// and !exists keep their operator. gt and lt have no API form, an error wrapping
// ErrBadSelector (no query can be rendered for them either).
func (s *Selector) LabelSelector() (*metav1.LabelSelector, error) {
	if len(s.reqs) == 0 {
		return nil, nil
	}
	ls := &metav1.LabelSelector{}
	for _, r := range s.reqs {
		expr := metav1.LabelSelectorRequirement{Key: r.name, Values: r.values}
		switch r.op {
		case selection.Equals, selection.DoubleEquals:
			if ls.MatchLabels == nil {
				ls.MatchLabels = map[string]string{}
			}
			if old, dup := ls.MatchLabels[r.name]; dup && old != r.values[0] {
				ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.name, Operator: metav1.LabelSelectorOpIn, Values: r.values})
				continue
			}
			ls.MatchLabels[r.name] = r.values[0]
			continue
		case selection.NotEquals, selection.NotIn:
			expr.Operator = metav1.LabelSelectorOpNotIn
		case selection.In:
			expr.Operator = metav1.LabelSelectorOpIn
		case selection.Exists:
			expr.Operator, expr.Values = metav1.LabelSelectorOpExists, nil
		case selection.DoesNotExist:
			expr.Operator, expr.Values = metav1.LabelSelectorOpDoesNotExist, nil
		default:
			return nil, fmt.Errorf("%w: operator %q has no label selector form", ErrBadSelector, r.op)
		}
		ls.MatchExpressions = append(ls.MatchExpressions, expr)
	}
	return ls, nil
}
