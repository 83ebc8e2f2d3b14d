package rules

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Query is a rendered query: the PromQL, and for a custom-metrics request the
// resource label holding the names of the objects its samples belong to.
type Query struct {
	PromQL string
	Label  string
}

// CustomRequest is a custom-metrics request for one series of a rule.
type CustomRequest struct {
	Series         string               // discovered series name
	Namespace      string               // "" for cluster-scoped objects
	Resource       schema.GroupResource // normalised
	Names          []string             // object names; empty = every object in Namespace (resource label matcher becomes label!="")
	MetricSelector labels.Selector      // may be nil, labels.Everything() or a *Selector
}

// queryArgs are the fields a metricsQuery template may use.
type queryArgs struct {
	// Series is the discovered series name.
	Series string
	// LabelMatchers is the comma-joined matchers, e.g. namespace="ns",pod=~"a|b".
	LabelMatchers string
	// LabelValuesByName maps each matched label to its values joined with |, escaped
	// for use inside a PromQL "..." or '...' string (see escape).
	LabelValuesByName map[string]string
	// GroupBy is the comma-joined GroupBySlice.
	GroupBy string
	// GroupBySlice is the resource label for custom queries and empty for external ones.
	GroupBySlice []string
}

// anyName is LabelValuesByName's entry for the resource label of a request without
// names: the regex matching every object, for templates that use it with =~.
const anyName = ".+"

// Custom renders the PromQL for a custom-metrics request and names the resource
// label it matched objects on (Query.Label), where the answer's samples carry the
// object names. LabelMatchers holds, in
// order: the metric selector's matchers, namespace="NS" on the rule's namespaces label
// (left out when Namespace is "" or Resource is namespaces itself) and the resource
// label's matcher; GroupBy is the resource label.
//
// LabelValuesByName maps each selector label to its values joined with |, the
// namespaces label to the namespace and the resource label to the names joined with |
// (".+" when Names is empty); later entries replace earlier ones for the same label.
// Values are escaped for use inside a PromQL "..." or '...' string: identical to
// prometheus-adapter's raw values for ordinary names, but unable to end the string.
//
// Selector errors wrap ErrBadSelector; others (series not a metric name, no label for
// the resource or namespaces, empty object name, template failure or empty output) do
// not. A *Selector (ParseSelector) as MetricSelector is not walked again.
func (r *Rule) Custom(req CustomRequest) (Query, error) {
	reqs, err := selectorRequirements(req.MetricSelector)
	if err != nil {
		return Query{}, err
	}
	return r.customQuery(req, reqs)
}

// CustomQuery is Custom's PromQL alone, for callers that only show or send it.
func (r *Rule) CustomQuery(req CustomRequest) (string, error) {
	q, err := r.Custom(req)
	return q.PromQL, err
}

func (r *Rule) customQuery(req CustomRequest, reqs []requirement) (Query, error) {
	if !metricNameRE.MatchString(req.Series) {
		return Query{}, fmt.Errorf("series %q is not a Prometheus metric name", req.Series)
	}
	set := newMatcherSet()
	if err := set.addRequirements(reqs); err != nil {
		return Query{}, err
	}
	namespace := req.Namespace
	if req.Resource == namespacesGR {
		namespace = "" // the object matcher names the namespace
	}
	resLabel, err := r.res.addObjectMatchers(set, namespace, req.Resource, req.Names)
	if err != nil {
		return Query{}, err
	}
	promql, err := r.renderGrouped(req.Series, set, resLabel)
	if err != nil {
		return Query{}, err
	}
	return Query{PromQL: promql, Label: resLabel}, nil
}

// ExternalQuery renders the PromQL for an external-metrics request. LabelMatchers holds
// the metric selector's matchers followed by namespace="NS" on the rule's namespaces
// label unless the rule is not namespaced (resources.namespaced: false) or namespace is "". GroupBy is empty and
// GroupBySlice an empty slice. LabelValuesByName is as for CustomQuery, without a
// resource label. Errors are as for Custom; a *Selector is not walked again.
func (r *Rule) ExternalQuery(series, namespace string, metricSelector labels.Selector) (string, error) {
	reqs, err := selectorRequirements(metricSelector)
	if err != nil {
		return "", err
	}
	return r.externalQuery(series, namespace, reqs)
}

func (r *Rule) externalQuery(series, namespace string, reqs []requirement) (string, error) {
	if !metricNameRE.MatchString(series) {
		return "", fmt.Errorf("series %q is not a Prometheus metric name", series)
	}
	set := newMatcherSet()
	if err := set.addRequirements(reqs); err != nil {
		return "", err
	}
	if r.externalNamespaced && namespace != "" {
		nsLabel, err := r.res.labelFor(namespacesGR)
		if err != nil {
			return "", err
		}
		set.add(matcher{name: nsLabel, op: "=", value: namespace}, namespace)
	}
	return r.render(queryArgs{
		Series:            series,
		LabelMatchers:     strings.Join(set.exprs, ","),
		LabelValuesByName: set.values,
		GroupBy:           "",
		GroupBySlice:      []string{},
	})
}

// renderGrouped renders the metricsQuery of series with the matchers of set,
// grouped by the resource label resLabel.
func (r *Rule) renderGrouped(series string, set *matcherSet, resLabel string) (string, error) {
	return r.render(queryArgs{
		Series:            series,
		LabelMatchers:     strings.Join(set.exprs, ","),
		LabelValuesByName: set.values,
		GroupBy:           resLabel,
		GroupBySlice:      []string{resLabel},
	})
}

// render executes the metricsQuery template; an empty (or all-space) result is an error.
func (r *Rule) render(args queryArgs) (string, error) {
	var sb strings.Builder
	if err := r.query.Execute(&sb, args); err != nil {
		return "", fmt.Errorf("render metricsQuery: %w", err)
	}
	if strings.TrimSpace(sb.String()) == "" {
		return "", fmt.Errorf("metricsQuery rendered an empty query")
	}
	return sb.String(), nil
}
