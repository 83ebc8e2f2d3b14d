package rulefile

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// namespacesResource is the group-resource a label must map to for a rule to be
// namespaced.
var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// Describe names a rule in messages: its list, its index in that list and its
// seriesQuery, e.g. `rules[3] (seriesQuery "{__name__=~\"^http_.*\"}")`.
func (r DiscoveryRule) Describe(list string, index int) string {
	return fmt.Sprintf("%s[%d] (seriesQuery %q)", list, index, r.SeriesQuery)
}

// Normalize resolves g through mapper to the group-resource the API serves (plural,
// lower case, group filled in), as prometheus-adapter does for overrides: "pod", "pods"
// and "Pod" all give pods; an empty group matches any group, so {resource: deployment}
// gives deployments.apps.
func (g GroupResource) Normalize(mapper meta.RESTMapper) (schema.GroupResource, error) {
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Group: g.Group, Resource: g.Resource})
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("resolve resource %q in group %q: %w", g.Resource, g.Group, err)
	}
	return gvr.GroupResource(), nil
}

// Validate checks the meaning of a loaded rule file and returns every problem found,
// as ValidationErrors, or nil. A nil mapper means DefaultRESTMapper().
//
// It rejects exactly what makes prometheus-adapter v0.12.0 refuse to start, naming the
// field, and the values of Ebbflow's own fields (nanValues, backend) that are not
// valid. What prometheus-adapter starts with but mishandles is accepted and reported
// by Warnings instead.
//
// Checks of a discovery rule: each seriesFilters entry has exactly one of is and
// isNot, a valid RE2 expression; name.matches is RE2; name.as is set when name.matches
// has more than one capture group; resources.template parses, runs, uses .Resource and
// gives a valid label pattern; every override names a resource the mapper knows;
// metricsQuery parses as a template. Resource rules: cpu and memory each have
// containerQuery and nodeQuery that parse as templates and valid resources.
func Validate(cfg *File, mapper meta.RESTMapper) error {
	if cfg == nil {
		return ValidationErrors{{Message: "config is nil"}}
	}
	if mapper == nil {
		mapper = DefaultRESTMapper()
	}
	var errs []FieldError
	for i, r := range cfg.Rules {
		errs = append(errs, checkDiscoveryRule(r, "rules", i, false, mapper)...)
	}
	for i, r := range cfg.ExternalRules {
		errs = append(errs, checkDiscoveryRule(r, "externalRules", i, true, mapper)...)
	}
	if cfg.ResourceRules != nil {
		errs = append(errs, checkResourceRules(*cfg.ResourceRules, mapper)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return ValidationErrors(errs)
}

// problems collects the FieldErrors of one rule.
type problems struct {
	rule string
	errs []FieldError
}

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, FieldError{Rule: p.rule, Field: field, Message: fmt.Sprintf(format, args...)})
}

func checkDiscoveryRule(r DiscoveryRule, list string, index int, external bool, mapper meta.RESTMapper) []FieldError {
	p := &problems{rule: r.Describe(list, index)}
	for i, f := range r.SeriesFilters {
		checkFilter(p, fmt.Sprintf("seriesFilters[%d]", i), f)
	}
	checkName(p, r.Name)
	checkResources(p, "resources", r.Resources, mapper)
	checkQueryTemplate(p, "metricsQuery", r.MetricsQuery)
	if r.NaNValues != "" && r.NaNValues != NaNZero && r.NaNValues != NaNDrop {
		p.add("nanValues", "must be %q or %q, not %q", NaNZero, NaNDrop, r.NaNValues)
	}
	return p.errs
}

// isNamespaced reports whether an external rule adds the request's namespace to its
// query; unset means yes.
func isNamespaced(m ResourceMapping) bool {
	return m.Namespaced == nil || *m.Namespaced
}

// checkResources checks a resources block: its template and its overrides.
func checkResources(p *problems, field string, m ResourceMapping, mapper meta.RESTMapper) {
	if m.Template != "" {
		checkLabelTemplate(p, field+".template", m.Template)
	}
	for _, label := range sortedKeys(m.Overrides) {
		checkOverride(p, joinPath(field+".overrides", label), m.Overrides[label], mapper)
	}
}

// checkOverride checks that an override names a resource the mapper knows, and
// returns it normalised.
func checkOverride(p *problems, field string, g GroupResource, mapper meta.RESTMapper) (schema.GroupResource, bool) {
	if g.Resource == "" {
		p.add(field+".resource", "must not be empty")
		return schema.GroupResource{}, false
	}
	gr, err := g.Normalize(mapper)
	switch {
	case err == nil:
		return gr, true
	case meta.IsAmbiguousError(err):
		p.add(field, "resource %q matches several resources; set group: %v", g.Resource, err)
	case meta.IsNoMatchError(err):
		p.add(field, "unknown resource %s%s", describeGroupResource(g), coreGroupHint(g))
	default:
		p.add(field, "%v", err)
	}
	return schema.GroupResource{}, false
}

func describeGroupResource(g GroupResource) string {
	if g.Group == "" {
		return fmt.Sprintf("%q", g.Resource)
	}
	return fmt.Sprintf("%q in group %q", g.Resource, g.Group)
}

func coreGroupHint(g GroupResource) string {
	if g.Group == "core" || g.Group == "v1" {
		return ` (the core group is written as "" or left out)`
	}
	return ""
}

func checkResourceRules(rr ResourceRules, mapper meta.RESTMapper) []FieldError {
	var errs []FieldError
	for _, r := range []struct {
		name string
		rule ResourceRule
	}{{"cpu", rr.CPU}, {"memory", rr.Memory}} {
		q := &problems{rule: "resourceRules." + r.name}
		checkQueryTemplate(q, "containerQuery", r.rule.ContainerQuery)
		checkQueryTemplate(q, "nodeQuery", r.rule.NodeQuery)
		checkResources(q, "resources", r.rule.Resources, mapper)
		errs = append(errs, q.errs...)
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
