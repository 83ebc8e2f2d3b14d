package rulefile

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Warnings returns findings that do not make a rule file invalid (prometheus-adapter
// accepts them, and so does Validate) but that almost certainly do not do what the
// author meant. Callers print or log them; they never stop the adapter. A nil mapper
// means DefaultRESTMapper(). Problems Validate reports are not repeated here, except
// that a resource Validate rejects is skipped silently.
//
// Findings: resources.namespaced on a custom rule (ignored there); a custom rule that
// maps no label to any resource (it yields no metrics); two override labels mapping to
// the same resource (which label queries use is then arbitrary); a query template that
// fails or renders nothing on sample arguments (every request would fail); resource
// rules whose resources cannot map pods, nodes or namespaces.
func Warnings(cfg *File, mapper meta.RESTMapper) []FieldError {
	if cfg == nil {
		return nil
	}
	if mapper == nil {
		mapper = DefaultRESTMapper()
	}
	var out []FieldError
	for i, r := range cfg.Rules {
		out = append(out, discoveryRuleWarnings(r, "rules", i, false, mapper)...)
	}
	for i, r := range cfg.ExternalRules {
		out = append(out, discoveryRuleWarnings(r, "externalRules", i, true, mapper)...)
	}
	if rr := cfg.ResourceRules; rr != nil {
		out = append(out, resourceRuleWarnings("cpu", rr.CPU, mapper)...)
		out = append(out, resourceRuleWarnings("memory", rr.Memory, mapper)...)
	}
	return out
}

func discoveryRuleWarnings(r DiscoveryRule, list string, index int, external bool, mapper meta.RESTMapper) []FieldError {
	p := &problems{rule: r.Describe(list, index)}
	if !external {
		if r.Resources.Namespaced != nil {
			p.add("resources.namespaced", "has no effect on rules (custom metrics), only on externalRules; it is ignored")
		}
		if r.Resources.Template == "" && len(r.Resources.Overrides) == 0 {
			p.add("resources", "maps no label to a resource, so the rule yields no metrics; set template or overrides")
		}
	}
	overrideWarnings(p, "resources.overrides", r.Resources, mapper)
	queryWarnings(p, "metricsQuery", r.MetricsQuery)
	return p.errs
}

func resourceRuleWarnings(name string, r ResourceRule, mapper meta.RESTMapper) []FieldError {
	p := &problems{rule: "resourceRules." + name}
	mapped := overrideWarnings(p, "resources.overrides", r.Resources, mapper)
	if r.Resources.Template == "" {
		for _, need := range []schema.GroupResource{{Resource: "pods"}, {Resource: "nodes"}, namespacesResource} {
			if !mapped[need] {
				p.add("resources", "no label maps to %s, so %s queries will fail; set template or an override",
					need.Resource, strings.TrimSuffix(need.Resource, "s"))
			}
		}
	}
	queryWarnings(p, "containerQuery", r.ContainerQuery)
	queryWarnings(p, "nodeQuery", r.NodeQuery)
	return p.errs
}

// overrideWarnings warns of two labels mapping to one resource and returns the
// resources the overrides map (those the mapper knows).
func overrideWarnings(p *problems, field string, m ResourceMapping, mapper meta.RESTMapper) map[schema.GroupResource]bool {
	labelOf := map[schema.GroupResource]string{}
	mapped := map[schema.GroupResource]bool{}
	for _, label := range sortedKeys(m.Overrides) {
		gr, err := m.Overrides[label].Normalize(mapper)
		if err != nil || m.Overrides[label].Resource == "" {
			continue // Validate reports it
		}
		if first, dup := labelOf[gr]; dup {
			p.add(field, "labels %q and %q both map to %s; which one queries use is arbitrary",
				first, label, gr)
			continue
		}
		labelOf[gr] = label
		mapped[gr] = true
	}
	return mapped
}

// queryWarnings runs a query template on sample arguments. Templates that do not parse
// or are empty are Validate's to report.
func queryWarnings(p *problems, field, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	t, err := parseTemplate(field, text)
	if err != nil {
		return
	}
	out, ran, err := tryExecute(t, sampleQueryArgs())
	switch {
	case !ran:
	case err != nil:
		p.add(field, "fails on sample arguments, so every request would fail: %v", err)
	case strings.TrimSpace(out) == "":
		p.add(field, "renders an empty query on sample arguments, so every request would fail")
	}
}
