package rulefile

import (
	"fmt"
	"strings"
)

// FieldError is one problem found in a rule file, by Load, Validate or Warnings.
//
// Its Error text is, with the parts that are empty left out:
//
//	line L:C: RULE: FIELD: MESSAGE
//
// for example
//
//	line 14:7: rules[2].resources.overide: unknown key "overide" (did you mean "overrides"?)
//	externalRules[1] (seriesQuery "queue_messages_ready"): resources: rule is namespaced but ...
type FieldError struct {
	// Rule names the rule the problem is in, as DiscoveryRule.Describe writes it, or
	// "resourceRules" / "resourceRules.cpu"; empty for problems found by Load.
	Rule string
	// Field is the path of the offending field: relative to Rule when Rule is set
	// (e.g. "name.as"), else the full YAML path (e.g. "rules[2].resources.overide").
	// Empty when the problem concerns the whole rule or the whole document.
	Field string
	// Line and Column locate the problem in the file, 1-based; zero when unknown
	// (Validate works on decoded values and never knows positions; YAML syntax errors
	// know the line only).
	Line, Column int
	// Message says what is wrong: lower case, no trailing period.
	Message string
}

// Error implements error.
func (e FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d:%d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	for _, part := range []string{e.Rule, e.Field} {
		if part != "" {
			b.WriteString(part)
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	return b.String()
}

// LoadErrors is every problem Load found in a rule file: syntax errors, unknown or
// duplicate keys and values of the wrong type. It is never empty when returned.
type LoadErrors []FieldError

// Error prints one problem per line, in document order.
func (e LoadErrors) Error() string { return joinErrors(e) }

// Unwrap gives each FieldError to errors.Is and errors.As.
func (e LoadErrors) Unwrap() []error { return unwrapErrors(e) }

// ValidationErrors is every problem Validate found in a decoded rule file. It is
// never empty when returned.
type ValidationErrors []FieldError

// Error prints one problem per line, in rule order.
func (e ValidationErrors) Error() string { return joinErrors(e) }

// Unwrap gives each FieldError to errors.Is and errors.As.
func (e ValidationErrors) Unwrap() []error { return unwrapErrors(e) }

func joinErrors(errs []FieldError) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func unwrapErrors(errs []FieldError) []error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return out
}
