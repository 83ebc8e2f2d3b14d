package rules

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxMetricNameLength bounds the API metric names ebbflow-adapter looks up, in bytes.
// A metric name is a path segment naming a resource-like thing; Kubernetes bounds
// resource names to 253 bytes, and a longer name is refused before any work (and is
// never remembered), so requests for huge names cannot cost memory or Prometheus calls.
const MaxMetricNameLength = 253

// CheckMetricName reports why name cannot be an API metric name served by any rule:
// empty, longer than MaxMetricNameLength, or holding a byte that is neither in the
// Prometheus metric-name alphabet nor printable ASCII (every rule's name.as is checked
// further by Rule.CanName). nil means "may exist".
func CheckMetricName(name string) error {
	if name == "" {
		return fmt.Errorf("metric name is empty")
	}
	if len(name) > MaxMetricNameLength {
		return fmt.Errorf("metric name is longer than %d bytes", MaxMetricNameLength)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || c == '/' {
			return fmt.Errorf("metric name holds byte %#x at %d, which no rule can produce", c, i)
		}
	}
	return nil
}

// captureClass is what a capture of a Prometheus metric name can hold.
const captureClass = `[a-zA-Z0-9_:]*`

// nameShape compiles the set of API names a rule can produce: name.as with each
// reference to a capture group replaced by captureClass (captures are substrings of a
// series name, which is a Prometheus metric name). The expansion is done by the regexp
// package itself, on a subject whose groups are unique marker bytes, so references
// such as "$1x" (a group named "1x", which expands to nothing) mean what they mean at
// request time. Rules with more groups than markers, or an as that is not valid
// UTF-8 or holds control characters, get the shape "any printable ASCII".
func nameShape(matches *regexp.Regexp, as string) *regexp.Regexp {
	groups := matches.NumSubexp() + 1
	const firstMarker, lastMarker = 0x01, 0x1f
	if groups > lastMarker-firstMarker+1 || !utf8.ValidString(as) || strings.ContainsFunc(as, func(r rune) bool { return r < ' ' }) {
		return regexp.MustCompile(`^[!-~]+$`)
	}
	subject := make([]byte, groups)
	idx := make([]int, 2*groups)
	for g := range groups {
		subject[g] = byte(firstMarker + g)
		idx[2*g], idx[2*g+1] = g, g+1
	}
	idx[0], idx[1] = 0, groups // $0 is the whole match
	expanded := matches.Expand(nil, []byte(as), subject, idx)
	var b strings.Builder
	b.WriteString("^")
	literal := 0
	for i, c := range expanded {
		if c >= firstMarker && c <= lastMarker {
			b.WriteString(regexp.QuoteMeta(string(expanded[literal:i])))
			b.WriteString(captureClass)
			literal = i + 1
		}
	}
	b.WriteString(regexp.QuoteMeta(string(expanded[literal:])))
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// CanName reports whether the rule could give some Prometheus series the API name
// metric. It is cheap and involves no I/O; discovery uses it to ask Prometheus only
// through the rules that could serve a requested name. False is proof; true is not.
func (r *Rule) CanName(metric string) bool {
	return len(metric) <= MaxMetricNameLength && r.namer.shape.MatchString(metric)
}
