package rules

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// namespacesGR is core namespaces, the resource whose label makes a series namespaced.
var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// groupSanitizer turns an API group into the form the resources template sees.
var groupSanitizer = strings.NewReplacer(".", "_", "-", "_")

// Sentinels stand for <<.Group>> and <<.Resource>> when the resources template is turned
// into a regex; they contain no regex metacharacters, so they survive regexp.QuoteMeta.
const (
	groupSentinel    = "\x00group\x00"
	resourceSentinel = "\x00resource\x00"
)

// resourceMap maps Prometheus label names to group-resources and back for one rule.
// Invariant: a label maps to gr only if labelFor(gr) returns that same label, so every
// resource found on a series can be queried through the label it was found by.
type resourceMap struct {
	mapper meta.RESTMapper
	// overrides maps a label to its normalised group-resource.
	overrides map[string]schema.GroupResource
	// overrideLabel maps a group-resource to its override label (the smallest, when
	// several overrides name the same resource).
	overrideLabel map[schema.GroupResource]string
	// tmpl is the resources template; nil when the rule has none.
	tmpl *template.Template
	// extractors recognise template labels; submatch 1 is the resource part.
	extractors []*regexp.Regexp
	// rendered caches labelFor's template results: schema.GroupResource -> string.
	rendered sync.Map
}

// newResourceMap compiles the resources section of a rule.
func newResourceMap(cfg rulefile.ResourceMapping, mapper meta.RESTMapper) (*resourceMap, error) {
	m := &resourceMap{
		mapper:        mapper,
		overrides:     make(map[string]schema.GroupResource, len(cfg.Overrides)),
		overrideLabel: make(map[schema.GroupResource]string, len(cfg.Overrides)),
	}
	labels := make([]string, 0, len(cfg.Overrides))
	for l := range cfg.Overrides {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		if !labelNameRE.MatchString(l) {
			continue // no series carries it; rulefile.Warnings reports it
		}
		o := cfg.Overrides[l]
		gr, err := normalize(mapper, schema.GroupResource{Group: o.Group, Resource: o.Resource})
		if err != nil {
			return nil, fmt.Errorf("resources.overrides[%s]: %w", l, err)
		}
		m.overrides[l] = gr
		if _, taken := m.overrideLabel[gr]; !taken {
			m.overrideLabel[gr] = l
		}
	}
	if cfg.Template != "" {
		if err := m.compileTemplate(cfg.Template); err != nil {
			return nil, fmt.Errorf("resources.template: %w", err)
		}
	}
	return m, nil
}

// compileTemplate parses the resources template and derives the regexes recognising its
// labels: the template's literal text must match exactly, <<.Group>> matches any (also
// empty) text and <<.Resource>> any non-empty text. Several lazy/greedy variants are
// kept so that a group containing underscores (networking_k8s_io) can still be split
// off; the round trip in resourceForLabel decides which split is right.
func (m *resourceMap) compileTemplate(text string) error {
	tmpl, err := template.New("resources").Delims("<<", ">>").Parse(text)
	if err != nil {
		return err
	}
	var sb strings.Builder
	err = tmpl.Execute(&sb, schema.GroupResource{Group: groupSentinel, Resource: resourceSentinel})
	if err != nil {
		return err
	}
	quoted := regexp.QuoteMeta(sb.String())
	if !strings.Contains(quoted, resourceSentinel) {
		return errors.New("must use <<.Resource>>")
	}
	seen := map[string]bool{}
	for _, v := range [][2]string{{".*?", ".+?"}, {".*", ".+?"}, {".*?", ".+"}, {".*", ".+"}} {
		expr := strings.Replace(quoted, resourceSentinel, "("+v[1]+")", 1)
		expr = strings.ReplaceAll(expr, resourceSentinel, "(?:"+v[1]+")")
		expr = "^" + strings.ReplaceAll(expr, groupSentinel, "(?:"+v[0]+")") + "$"
		if seen[expr] {
			continue
		}
		seen[expr] = true
		re, err := regexp.Compile(expr)
		if err != nil {
			return err
		}
		m.extractors = append(m.extractors, re)
	}
	m.tmpl = tmpl
	return nil
}

// Resources returns the group-resources (normalised via the RESTMapper: plural resource,
// group) that the given series label names map to (overrides first, then the template
// regex; unmappable matches skipped), and whether one of them is core namespaces.
// Each resource appears once, in the order of the first label mapping to it. A label
// maps to a resource only when LabelForResource of that resource returns the label, so
// a resource found here can always be queried.
func (r *Rule) Resources(labelNames []string) (resources []schema.GroupResource, namespaced bool) {
	for _, l := range labelNames {
		gr, ok := r.res.resourceForLabel(l)
		if !ok || slices.Contains(resources, gr) {
			continue
		}
		resources = append(resources, gr)
		if gr == namespacesGR {
			namespaced = true
		}
	}
	return resources, namespaced
}

// LabelForResource returns the Prometheus label that holds the names of gr's objects:
// the override naming gr, else the resources template rendered with gr's group (dots
// and dashes turned into underscores) and singular resource. gr must be normalised.
// The result is always a valid Prometheus label name; it is an error when no override
// names gr and the rule has no template, or when the template's output is not a label
// name.
func (r *Rule) LabelForResource(gr schema.GroupResource) (string, error) {
	return r.res.labelFor(gr)
}

func (m *resourceMap) labelFor(gr schema.GroupResource) (string, error) {
	if l, ok := m.overrideLabel[gr]; ok {
		return l, nil
	}
	if m.tmpl == nil {
		return "", fmt.Errorf("no label for %s: no override names it and the rule has no resources.template", gr)
	}
	if l, ok := m.rendered.Load(gr); ok {
		return l.(string), nil
	}
	singular, err := m.mapper.ResourceSingularizer(gr.Resource)
	if err != nil {
		return "", fmt.Errorf("no label for %s: %w", gr, err)
	}
	var sb strings.Builder
	data := schema.GroupResource{Group: groupSanitizer.Replace(gr.Group), Resource: singular}
	if err := m.tmpl.Execute(&sb, data); err != nil {
		return "", fmt.Errorf("no label for %s: %w", gr, err)
	}
	l := sb.String()
	if !labelNameRE.MatchString(l) {
		return "", fmt.Errorf("no label for %s: resources.template renders %q, not a Prometheus label name", gr, l)
	}
	m.rendered.Store(gr, l)
	return l, nil
}

// resourceForLabel maps one label name to a group-resource, if it maps to one.
func (m *resourceMap) resourceForLabel(label string) (schema.GroupResource, bool) {
	if gr, ok := m.overrides[label]; ok {
		return gr, m.overrideLabel[gr] == label
	}
	if m.tmpl == nil || !labelNameRE.MatchString(label) {
		return schema.GroupResource{}, false
	}
	tried := map[string]bool{}
	for _, re := range m.extractors {
		sub := re.FindStringSubmatch(label)
		if sub == nil || tried[sub[1]] {
			continue
		}
		tried[sub[1]] = true
		if gr, ok := m.roundTrip(label, sub[1]); ok {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}

// roundTrip finds the resource, in any group, named part (singular or plural) whose
// label is exactly label. When several are, the mapper's preference decides; without
// one the label is skipped as ambiguous.
func (m *resourceMap) roundTrip(label, part string) (schema.GroupResource, bool) {
	gvr := schema.GroupVersionResource{Resource: part}
	gvrs, err := m.mapper.ResourcesFor(gvr)
	if err != nil && len(gvrs) == 0 {
		return schema.GroupResource{}, false
	}
	var hits []schema.GroupResource
	for _, g := range gvrs {
		gr := g.GroupResource()
		if slices.Contains(hits, gr) {
			continue
		}
		if l, err := m.labelFor(gr); err == nil && l == label {
			hits = append(hits, gr)
		}
	}
	switch len(hits) {
	case 0:
		return schema.GroupResource{}, false
	case 1:
		return hits[0], true
	}
	preferred, err := m.mapper.ResourceFor(gvr)
	if err == nil && slices.Contains(hits, preferred.GroupResource()) {
		return preferred.GroupResource(), true
	}
	return schema.GroupResource{}, false
}

// normalize returns the plural group-resource the mapper knows for gr, whose resource
// may be singular or plural. An empty group prefers the core group, then the mapper's
// own preference among groups.
func normalize(mapper meta.RESTMapper, gr schema.GroupResource) (schema.GroupResource, error) {
	in := gr.WithVersion("")
	gvrs, err := mapper.ResourcesFor(in)
	if err != nil && len(gvrs) == 0 {
		return schema.GroupResource{}, err
	}
	var distinct []schema.GroupResource
	for _, g := range gvrs {
		if !slices.Contains(distinct, g.GroupResource()) {
			distinct = append(distinct, g.GroupResource())
		}
	}
	switch {
	case len(distinct) == 0:
		return schema.GroupResource{}, &meta.NoResourceMatchError{PartialResource: in}
	case len(distinct) == 1:
		return distinct[0], nil
	}
	if gr.Group == "" {
		for _, d := range distinct {
			if d.Group == "" {
				return d, nil
			}
		}
	}
	preferred, err := mapper.ResourceFor(in)
	if err != nil {
		return schema.GroupResource{}, err
	}
	return preferred.GroupResource(), nil
}

// addObjectMatchers adds to set the matchers that select objects of resource:
// namespace="NS" on the namespaces label when namespace is not "", then the
// resource label's matcher for names (every object when names is empty). It
// returns the resource label.
func (m *resourceMap) addObjectMatchers(set *matcherSet, namespace string, resource schema.GroupResource, names []string) (string, error) {
	if namespace != "" {
		nsLabel, err := m.labelFor(namespacesGR)
		if err != nil {
			return "", err
		}
		set.add(matcher{name: nsLabel, op: "=", value: namespace}, namespace)
	}
	resLabel, err := m.labelFor(resource)
	if err != nil {
		return "", err
	}
	rm, err := resourceMatcher(resLabel, names)
	if err != nil {
		return "", err
	}
	raw := strings.Join(names, "|")
	if len(names) == 0 {
		raw = anyName
	}
	set.add(rm, raw)
	return resLabel, nil
}
