package rulefile

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Warnings returns findings that do not make a rule file invalid (prometheus-adapter
// v0.12.0 starts with them, and so do Validate and ebbflow-adapter) but that almost
// certainly do not do what the author meant: most make prometheus-adapter fail or
// answer wrongly later, without a word at start. Callers print or log them and count
// them; they never stop the adapter. A nil mapper means DefaultRESTMapper(). Problems
// Validate reports are not repeated here, except that a resource Validate rejects is
// skipped silently. Each finding names its rule and field (FieldError.Rule, .Field).
//
// Findings of the file: YAML documents after the first (ignored), null keys of a
// mapping (ignored). Of a discovery rule: a seriesQuery that is empty or not a series
// selector (discovery fails); name.as referring to capture groups that do not exist
// (they expand to nothing); resources.namespaced on a custom rule (ignored there); a
// custom rule that maps no label to any resource (it yields no metrics); an override
// label that is not a Prometheus label name (ignored); two override labels mapping to
// the same resource (which label queries use is then arbitrary); a metricsQuery that
// is empty, fails or renders nothing or invalid PromQL on sample arguments (every
// request fails); a namespaced external rule that maps no label to namespaces (every
// request in a namespace fails). Of resourceRules: a window that is not positive,
// a containerLabel that is not a label name, container and node queries as
// metricsQuery, and resources that cannot map pods, nodes or namespaces.
func Warnings(cfg *File, mapper meta.RESTMapper) []FieldError {
	if cfg == nil {
		return nil
	}
	if mapper == nil {
		mapper = DefaultRESTMapper()
	}
	out := append([]FieldError(nil), cfg.loadWarnings...)
	for i, r := range cfg.Rules {
		out = append(out, discoveryRuleWarnings(r, "rules", i, false, mapper)...)
	}
	for i, r := range cfg.ExternalRules {
		out = append(out, discoveryRuleWarnings(r, "externalRules", i, true, mapper)...)
	}
	if rr := cfg.ResourceRules; rr != nil {
		p := &problems{rule: "resourceRules"}
		if rr.Window <= 0 {
			p.add("window", "is not greater than zero, so every answer reports a window of 0s; set the range the queries use, e.g. 5m")
		}
		out = append(out, p.errs...)
		out = append(out, resourceRuleWarnings("cpu", rr.CPU, mapper)...)
		out = append(out, resourceRuleWarnings("memory", rr.Memory, mapper)...)
	}
	return out
}

func discoveryRuleWarnings(r DiscoveryRule, list string, index int, external bool, mapper meta.RESTMapper) []FieldError {
	p := &problems{rule: r.Describe(list, index)}
	seriesQueryWarnings(p, r.SeriesQuery)
	nameWarnings(p, r.Name)
	if !external {
		if r.Resources.Namespaced != nil {
			p.add("resources.namespaced", "has no effect on rules (custom metrics), only on externalRules; it is ignored")
		}
		if r.Resources.Template == "" && len(r.Resources.Overrides) == 0 {
			p.add("resources", "maps no label to a resource, so the rule yields no metrics; set template or overrides")
		}
	}
	mapped := overrideWarnings(p, "resources.overrides", r.Resources, mapper)
	args := sampleQueryArgs()
	if external {
		args = externalQueryArgs()
	}
	queryWarnings(p, "metricsQuery", r.MetricsQuery, args)
	if external && isNamespaced(r.Resources) && r.Resources.Template == "" && !mapped[namespacesResource] {
		p.add("resources", "rule is namespaced but no label maps to namespaces, so every request in a namespace fails; "+
			"set resources.namespaced: false or map a label to namespaces")
	}
	return p.errs
}

// seriesQueryWarnings reports a seriesQuery Prometheus refuses: discovery's match[]
// then fails, and with it every relist of the rule's backend.
func seriesQueryWarnings(p *problems, q string) {
	const consequence = "; Prometheus refuses it, so discovery on the rule's backend fails at every relist and its rules yield no metrics"
	if strings.TrimSpace(q) == "" {
		p.add("seriesQuery", "is empty"+consequence)
		return
	}
	if _, err := ParseSeriesSelector(q); err != nil {
		p.add("seriesQuery", "is not a series selector (%v)"+consequence, err)
	}
}

func resourceRuleWarnings(name string, r ResourceRule, mapper meta.RESTMapper) []FieldError {
	p := &problems{rule: "resourceRules." + name}
	if !promLabelName.MatchString(r.ContainerLabel) {
		p.add("containerLabel", "%q is not a Prometheus label name, so every pod request fails; set it, e.g. container", r.ContainerLabel)
	}
	mapped := overrideWarnings(p, "resources.overrides", r.Resources, mapper)
	if r.Resources.Template == "" {
		for _, need := range []schema.GroupResource{{Resource: "pods"}, {Resource: "nodes"}, namespacesResource} {
			if !mapped[need] {
				p.add("resources", "no label maps to %s, so %s queries will fail; set template or an override",
					need.Resource, strings.TrimSuffix(need.Resource, "s"))
			}
		}
	}
	queryWarnings(p, "containerQuery", r.ContainerQuery, sampleQueryArgs())
	queryWarnings(p, "nodeQuery", r.NodeQuery, sampleQueryArgs())
	return p.errs
}

// promLabelName is a Prometheus label name as queries may write it unquoted.
var promLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// overrideWarnings warns of override labels that are not label names (ignored) and
// of two labels mapping to one resource, and returns the resources the overrides map
// (those the mapper knows).
func overrideWarnings(p *problems, field string, m ResourceMapping, mapper meta.RESTMapper) map[schema.GroupResource]bool {
	labelOf := map[schema.GroupResource]string{}
	mapped := map[schema.GroupResource]bool{}
	for _, label := range sortedKeys(m.Overrides) {
		gr, err := m.Overrides[label].Normalize(mapper)
		if err != nil || m.Overrides[label].Resource == "" {
			continue // Validate reports it
		}
		if !promLabelName.MatchString(label) {
			p.add(joinPath(field, label), "%q is not a Prometheus label name, so no series carries it; the override is ignored", label)
			continue
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

// queryWarnings runs a query template on sample arguments: empty, failing, rendering
// nothing or invalid PromQL, every request would fail. Templates that do not parse are
// Validate's to report.
func queryWarnings(p *problems, field, text string, args queryTemplateArgs) {
	if strings.TrimSpace(text) == "" {
		p.add(field, "is empty, so every request fails")
		return
	}
	t, err := parseTemplate(field, text)
	if err != nil {
		return
	}
	out, ran, err := tryExecute(t, args)
	switch {
	case !ran:
	case err != nil:
		p.add(field, "fails on sample arguments, so every request would fail: %v", err)
	case strings.TrimSpace(out) == "":
		p.add(field, "renders an empty query on sample arguments, so every request would fail")
	default:
		if _, err := ParsePromQL(out); err != nil {
			p.add(field, "renders invalid PromQL on sample arguments, so every request would fail: %v; rendered query: %s", err, out)
		}
	}
}
