package rules

import (
	"errors"
	"fmt"
	"regexp"
	"text/template"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// Kind says which API a rule serves.
type Kind int

const (
	// Custom rules serve custom.metrics.k8s.io (the rule file's "rules").
	Custom Kind = iota
	// External rules serve external.metrics.k8s.io (the rule file's "externalRules").
	External
)

// String returns "custom" or "external".
func (k Kind) String() string {
	switch k {
	case Custom:
		return "custom"
	case External:
		return "external"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// ErrBadSelector marks errors caused by the metric label selector of a request: an
// unsupported operator, a label name that is not a Prometheus label name, a selector that
// selects nothing or one longer than MaxSelectorLength. Callers map it to HTTP 400;
// test with errors.Is.
var ErrBadSelector = errors.New("bad metric selector")

// MaxSelectorLength is the largest accepted metric label selector, in bytes of its
// String() form. Longer selectors fail with ErrBadSelector before anything is rendered.
const MaxSelectorLength = 4096

var (
	// labelNameRE is the Prometheus label-name grammar.
	labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	// metricNameRE is the Prometheus (legacy) metric-name grammar.
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)

// Rule is a compiled, immutable discovery rule, safe for concurrent use.
type Rule struct {
	index              int
	kind               Kind
	seriesQuery        string
	namer              namer
	res                *resourceMap
	externalNamespaced bool
	query              *template.Template
	groupsByResource   bool
	nanValues          string
	backend            string
}

// Compile checks a discovery rule and compiles it. index is the rule's position in its
// list and kind the list it comes from; both are only recorded (and used in errors).
// The mapper normalises resources: overrides at compile time, labels matched by the
// resources template on every call to Resources. An override naming a resource the
// mapper does not know is an error. What prometheus-adapter starts with and fails on
// later compiles and fails the same way: an empty metricsQuery fails every request, a
// namespaced external rule that maps no label to namespaces every request in a
// namespace (rulefile.Warnings reports both).
func Compile(rule rulefile.DiscoveryRule, index int, kind Kind, mapper meta.RESTMapper) (*Rule, error) {
	r, err := compile(rule, index, kind, mapper)
	if err != nil {
		return nil, fmt.Errorf("%s rule %d: %w", kind, index, err)
	}
	return r, nil
}

func compile(rule rulefile.DiscoveryRule, index int, kind Kind, mapper meta.RESTMapper) (*Rule, error) {
	if mapper == nil {
		return nil, errors.New("nil RESTMapper")
	}
	nm, err := newNamer(rule.SeriesFilters, rule.Name)
	if err != nil {
		return nil, err
	}
	res, err := newResourceMap(rule.Resources, mapper)
	if err != nil {
		return nil, err
	}
	if rule.NaNValues != "" && rule.NaNValues != rulefile.NaNZero && rule.NaNValues != rulefile.NaNDrop {
		return nil, fmt.Errorf("nanValues must be %q or %q, not %q", rulefile.NaNZero, rulefile.NaNDrop, rule.NaNValues)
	}
	query, err := template.New("metricsQuery").Delims("<<", ">>").Parse(rule.MetricsQuery)
	if err != nil {
		return nil, fmt.Errorf("metricsQuery: %w", err)
	}
	r := &Rule{
		index:              index,
		kind:               kind,
		seriesQuery:        rule.SeriesQuery,
		namer:              nm,
		res:                res,
		externalNamespaced: rule.Resources.Namespaced == nil || *rule.Resources.Namespaced,
		query:              query,
		groupsByResource:   groupsByResource(query),
		nanValues:          rule.NaNValues,
		backend:            BackendName(rule.Backend),
	}
	// Every namespaced request needs the namespace label: render it once here, so
	// requests find it cached. A rule that maps none still compiles, as in
	// prometheus-adapter; its namespaced requests fail (rulefile.Warnings says so).
	_, _ = res.labelFor(namespacesGR)
	return r, nil
}

// NaNValues returns the rule's nanValues: rulefile.NaNZero, rulefile.NaNDrop, or
// empty for the adapter's default.
func (r *Rule) NaNValues() string { return r.nanValues }

// Backend returns the name of the Prometheus backend the rule discovers and queries
// in; empty for the default backend (rulefile.DefaultBackend).
func (r *Rule) Backend() string { return r.backend }

// BackendName normalises a rule file's backend field: rulefile.DefaultBackend and
// empty both give "", the default backend.
func BackendName(name string) string {
	if name == rulefile.DefaultBackend {
		return ""
	}
	return name
}

// Index returns the rule's position in its list, as given to Compile.
func (r *Rule) Index() int { return r.index }

// Kind returns the API the rule serves, as given to Compile.
func (r *Rule) Kind() Kind { return r.kind }

// SeriesQuery returns the rule's series selector, unchanged, for discovery's match[].
func (r *Rule) SeriesQuery() string { return r.seriesQuery }

// GroupsByResource reports whether the rule's metricsQuery keeps the resource label as
// the grouping of every aggregation, so that a namespace-wide query filtered to a set of
// names yields exactly the samples a query listing those names yields. It is
// conservative: false means "not proven", never "proven different". See groupby.go for
// the rules applied.
func (r *Rule) GroupsByResource() bool { return r.groupsByResource }
