package rules

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// hostileValues try to leave their PromQL string or confuse a lexer.
var hostileValues = []string{
	`a"} or vector(1) or x{b="`,
	`"`, `\`, `\"`, `a\\"b`, `\x41`, `\u0041`, `\`,
	"line1\nline2", "\r", "\t", "\x00", "\x00\"\x00",
	"ünïcødé ☃", "\u2028", "\ufeff", "\U0001F600",
	"\xff\xfe", "a\xc3", // invalid UTF-8
	`'`, "`", `.*`, `|`, `)(`, `}`, `{`, "# comment", `",namespace=~".*`,
}

// securityTemplate exposes LabelMatchers and LabelValuesByName, each value quoted.
const securityTemplate = `<<.Series>>{<<.LabelMatchers>>}|` +
	`<<range $k, $v := .LabelValuesByName>><<$k>>="<<$v>>",<<end>>`

func securityRule(t testing.TB) *Rule {
	r, err := Compile(rulefile.DiscoveryRule{
		Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
		MetricsQuery: securityTemplate,
	}, 0, Custom, testMapper())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

func TestHostileValuesGolden(t *testing.T) {
	r := securityRule(t)
	got, err := r.CustomQuery(CustomRequest{
		Series:         "m",
		Namespace:      "ns\"x",
		Resource:       podsGR,
		Names:          []string{`p"} or vector(1)`, "q\\"},
		MetricSelector: labels.SelectorFromValidatedSet(labels.Set{"app": `a"} or vector(1) or x{b="`}),
	})
	want := `m{app="a\"} or vector(1) or x{b=\"",namespace="ns\"x",pod=~"p\"\\} or vector\\(1\\)|q\\\\"}|` +
		`app="a\"} or vector(1) or x{b=\"",namespace="ns\"x",pod="p\"} or vector(1)|q\\",`
	if err != nil || got != want {
		t.Fatalf("CustomQuery = %q, %v\nwant %q", got, err, want)
	}
}

// TestHostileValues sends every hostile value through the selector, the namespace and
// the object names, and checks that the query's structure is unchanged and every value
// comes back exactly.
func TestHostileValues(t *testing.T) {
	r := securityRule(t)
	for _, v := range hostileValues {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			checkCustom(t, r, requirement{name: "app", op: selection.Equals, values: []string{v}}, v, v)
			checkCustom(t, r, requirement{name: "app", op: selection.In, values: []string{v, "zz"}}, v, "")
			checkCustom(t, r, requirement{name: "app", op: selection.NotEquals, values: []string{v}}, "ns", v)
			got, err := r.CustomQuery(CustomRequest{Series: "m", Namespace: v, Resource: podsGR, Names: []string{v, v + "2"},
				MetricSelector: labels.SelectorFromValidatedSet(labels.Set{"app": v})})
			if err != nil {
				t.Fatalf("CustomQuery: %v", err)
			}
			names := escapedAlternatives([]string{v, v + "2"})
			wantSkeleton := `m{app="",namespace="",pod=~""}|app="",namespace="",pod="",`
			wantValues := []string{v, v, names, v, v, v + "|" + v + "2"}
			assertStructure(t, got, wantSkeleton, wantValues)
		})
	}
}

// TestHostileValuesSingleQuoted uses LabelValuesByName inside a single-quoted PromQL
// string: every value either comes back exactly or makes the query unparsable (a " is
// not a valid escape there), never a different query.
func TestHostileValuesSingleQuoted(t *testing.T) {
	r := mustCompile(t, rulefile.DiscoveryRule{
		Resources:    rulefile.ResourceMapping{Template: "<<.Resource>>"},
		MetricsQuery: `<<.Series>>{pod=~'<<index .LabelValuesByName "pod">>',app='<<index .LabelValuesByName "app">>'}`,
	})
	for _, v := range append(hostileValues, `'} or vector(1) or x{b='`, `it's`) {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			got, err := r.CustomQuery(CustomRequest{Series: "m", Resource: podsGR, Names: []string{v, "b"},
				MetricSelector: labels.SelectorFromValidatedSet(labels.Set{"app": v})})
			if err != nil {
				t.Fatalf("CustomQuery: %v", err)
			}
			skeleton, values, err := splitPromQL(got)
			if err != nil {
				if !strings.Contains(v, `"`) {
					t.Fatalf("query %q does not lex: %v", got, err)
				}
				return
			}
			want := []string{v + "|b", v}
			if skeleton != `m{pod=~"",app=""}` || !slices.Equal(values, want) {
				t.Fatalf("query %q: skeleton %q values %q; want %q", got, skeleton, values, want)
			}
		})
	}
}

// escapedAlternatives is what the =~ matcher on the resource label must hold.
func escapedAlternatives(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.NewReplacer(`\`, `\\`, `.`, `\.`, `+`, `\+`, `*`, `\*`, `?`, `\?`, `(`, `\(`, `)`, `\)`,
			`|`, `\|`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`).Replace(n)
	}
	return strings.Join(out, "|")
}

// opText is the PromQL operator the selector operators must become, by value count.
func opText(op selection.Operator, n int) (string, bool) {
	switch op {
	case selection.Equals, selection.DoubleEquals:
		return map[bool]string{true: "=", false: "=~"}[n == 1], n > 0
	case selection.NotEquals:
		return map[bool]string{true: "!=", false: "!~"}[n == 1], n > 0
	case selection.In:
		return "=~", n > 0
	case selection.NotIn:
		return "!~", n > 0
	case selection.Exists:
		return "!=", n == 0
	case selection.DoesNotExist:
		return "=", n == 0
	}
	return "", false
}

// checkCustom renders req with a namespace and one object name (none when object is
// "") and asserts the structure and values of the result, or ErrBadSelector when the
// requirement is not expressible.
func checkCustom(t *testing.T, r *Rule, req requirement, namespace, object string) {
	t.Helper()
	var names []string
	if object != "" {
		names = []string{object}
	}
	q, err := r.customQuery(CustomRequest{Series: "m", Namespace: namespace, Resource: podsGR, Names: names}, []requirement{req})
	got := q.PromQL
	op, ok := opText(req.op, len(req.values))
	if !ok || !labelNameRE.MatchString(req.name) {
		if !errors.Is(err, ErrBadSelector) {
			t.Fatalf("customQuery(%q) = %q, %v; want ErrBadSelector", req, got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("customQuery(%q): %v", req, err)
	}
	if q.Label != "pod" {
		t.Fatalf("customQuery(%q) names label %q, want pod (the label it matched objects on)", req, q.Label)
	}
	byName := map[string]string{req.name: strings.Join(req.values, "|")}
	skeleton := "m{" + req.name + op + `""`
	values := []string{strings.Join(req.values, "|")}
	if namespace != "" {
		skeleton += `,namespace=""`
		values = append(values, namespace)
		byName["namespace"] = namespace
	}
	skeleton += map[bool]string{true: `,pod!=""}|`, false: `,pod=""}|`}[object == ""]
	values = append(values, object)
	byName["pod"] = map[bool]string{true: ".+", false: object}[object == ""]
	skeleton, values = withValuesByName(skeleton, values, byName)
	assertStructure(t, got, skeleton, values)
}

// assertStructure checks that query lexes as PromQL into exactly wantSkeleton outside
// its strings and exactly wantValues inside them.
func assertStructure(t *testing.T, query, wantSkeleton string, wantValues []string) {
	t.Helper()
	skeleton, values, err := splitPromQL(query)
	if err != nil {
		t.Fatalf("query %q does not lex: %v", query, err)
	}
	if skeleton != wantSkeleton {
		t.Fatalf("query %q\nskeleton %q\nwant     %q", query, skeleton, wantSkeleton)
	}
	if !slices.Equal(values, wantValues) {
		t.Fatalf("query %q\nvalues %q\nwant   %q", query, values, wantValues)
	}
}

var fuzzOps = []selection.Operator{
	selection.Equals, selection.DoubleEquals, selection.NotEquals, selection.In, selection.NotIn,
	selection.Exists, selection.DoesNotExist, selection.GreaterThan, selection.LessThan, "~=",
}

// FuzzSelectorQuery renders requirements made of arbitrary label names, operators and
// values (bypassing labels.NewRequirement's validation), namespaces and object names,
// and asserts that the query's structure never changes and every value survives
// exactly; for equality it also goes through a real labels.Selector and ExternalQuery.
func FuzzSelectorQuery(f *testing.F) {
	for i, v := range hostileValues {
		f.Add("app", uint8(i), v, "b", "ns", "pod-0")
		f.Add("a_b", uint8(0), "web", v, v, v)
	}
	f.Add("app.kubernetes.io/name", uint8(0), "web", "", "ns", "p")
	f.Add("", uint8(0), "web", "", "ns", "p")
	f.Add("pod", uint8(3), "x", "y", "", "")
	f.Add("namespace", uint8(5), "", "", "ns", "p")
	f.Add("n", uint8(7), "5", "", "ns", "p")
	f.Add("é", uint8(0), "x", "", "ns", "p")
	r := securityRule(f)
	f.Fuzz(func(t *testing.T, name string, opIdx uint8, v1, v2, namespace, object string) {
		op := fuzzOps[int(opIdx)%len(fuzzOps)]
		var values []string
		switch op {
		case selection.Exists, selection.DoesNotExist:
		case selection.Equals, selection.NotEquals:
			values = []string{v1}
		default:
			values = []string{v1}
			if v2 != v1 {
				values = append(values, v2)
			}
			sort.Strings(values)
		}
		checkCustom(t, r, requirement{name: name, op: op, values: values}, namespace, object)
		if op == selection.Equals {
			checkThroughSelector(t, r, name, v1, namespace)
		}
	})
}

// checkThroughSelector renders name=value as a real labels.Selector through the
// exported API, for both custom and external queries.
func checkThroughSelector(t *testing.T, r *Rule, name, value, namespace string) {
	t.Helper()
	sel := labels.SelectorFromValidatedSet(labels.Set{name: value})
	custom, err := r.CustomQuery(CustomRequest{Series: "m", Namespace: namespace, Resource: podsGR, Names: []string{"p"}, MetricSelector: sel})
	external, errExt := r.ExternalQuery("m", namespace, sel)
	if len(sel.String()) > MaxSelectorLength || !labelNameRE.MatchString(name) {
		if !errors.Is(err, ErrBadSelector) || !errors.Is(errExt, ErrBadSelector) {
			t.Fatalf("selector %q: errors %v, %v; want ErrBadSelector", sel, err, errExt)
		}
		return
	}
	if err != nil || errExt != nil {
		t.Fatalf("selector %q: errors %v, %v", sel, err, errExt)
	}
	checkCustomString(t, custom, name, value, namespace)
	skeleton, values := "m{"+name+`=""`, []string{value}
	byName := map[string]string{name: value}
	if namespace != "" {
		skeleton += `,namespace=""`
		values = append(values, namespace)
		byName["namespace"] = namespace
	}
	skeleton, values = withValuesByName(skeleton+"}|", values, byName)
	assertStructure(t, external, skeleton, values)
}

// checkCustomString asserts the structure of a custom query for name=value, pod "p".
func checkCustomString(t *testing.T, query, name, value, namespace string) {
	t.Helper()
	byName := map[string]string{name: value}
	skeleton, values := "m{"+name+`=""`, []string{value}
	if namespace != "" {
		skeleton += `,namespace=""`
		values = append(values, namespace)
		byName["namespace"] = namespace
	}
	skeleton += `,pod=""}|`
	values = append(values, "p")
	byName["pod"] = "p"
	skeleton, values = withValuesByName(skeleton, values, byName)
	assertStructure(t, query, skeleton, values)
}

// withValuesByName appends the expected LabelValuesByName part of securityTemplate.
func withValuesByName(skeleton string, values []string, byName map[string]string) (string, []string) {
	for _, k := range slices.Sorted(maps.Keys(byName)) {
		skeleton += k + `="",`
		values = append(values, byName[k])
	}
	return skeleton, values
}
