package rules

import (
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// podsGroupResource is the resource of PodMetrics requests.
var podsGroupResource = schema.GroupResource{Resource: "pods"}

// ResourceRules are compiled resourceRules (metrics.k8s.io), immutable and safe for
// concurrent use.
type ResourceRules struct {
	CPU    ResourceRule
	Memory ResourceRule
	// Window is reported as the window of every PodMetrics and NodeMetrics.
	Window time.Duration
	// Backend is the Prometheus backend both resources are queried in; empty for
	// the default backend.
	Backend string
}

// ResourceRule is one compiled resource (cpu or memory) of resourceRules.
type ResourceRule struct {
	// Container renders the containerQuery: one sample per container of the pods asked.
	Container *ResourceQuery
	// Node renders the nodeQuery: one sample per node asked.
	Node *ResourceQuery
	// Backend is ResourceRules.Backend, repeated so each resource says where it is
	// queried.
	Backend string
	// ContainerLabel is the label holding the container name; the container query is
	// grouped by it after the pod label.
	ContainerLabel string
}

// CompileResourceRules compiles resourceRules. Both queries of a resource share its
// resources mapping. As in prometheus-adapter, what a request needs is looked up per
// request: a file that maps no label to pods, namespaces or nodes, has an empty
// query or a containerLabel that is not a label name loads, and the requests that
// need the missing part fail (rulefile.Warnings reports each). A window that is not
// positive is reported as it is.
func CompileResourceRules(cfg rulefile.ResourceRules, mapper meta.RESTMapper) (*ResourceRules, error) {
	if mapper == nil {
		return nil, errors.New("nil RESTMapper")
	}
	cpu, err := compileResourceRule(cfg.CPU, mapper)
	if err != nil {
		return nil, fmt.Errorf("resourceRules.cpu: %w", err)
	}
	mem, err := compileResourceRule(cfg.Memory, mapper)
	if err != nil {
		return nil, fmt.Errorf("resourceRules.memory: %w", err)
	}
	backend := BackendName(cfg.Backend)
	cpu.Backend, mem.Backend = backend, backend
	return &ResourceRules{CPU: cpu, Memory: mem, Window: time.Duration(cfg.Window), Backend: backend}, nil
}

func compileResourceRule(cfg rulefile.ResourceRule, mapper meta.RESTMapper) (ResourceRule, error) {
	res, err := newResourceMap(cfg.Resources, mapper)
	if err != nil {
		return ResourceRule{}, err
	}
	container, err := newResourceQuery("containerQuery", cfg.ContainerQuery, res)
	if err != nil {
		return ResourceRule{}, err
	}
	node, err := newResourceQuery("nodeQuery", cfg.NodeQuery, res)
	if err != nil {
		return ResourceRule{}, err
	}
	return ResourceRule{Container: container, Node: node, ContainerLabel: cfg.ContainerLabel}, nil
}

// ResourceQuery is a compiled containerQuery or nodeQuery. Its template sees the
// fields of a metricsQuery; .Series is always empty, as in prometheus-adapter.
type ResourceQuery struct {
	res              *resourceMap
	query            *template.Template
	groupsByResource bool
}

func newResourceQuery(field, text string, res *resourceMap) (*ResourceQuery, error) {
	t, err := template.New(field).Delims("<<", ">>").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return &ResourceQuery{res: res, query: t, groupsByResource: groupsByResource(t)}, nil
}

// ResourceRequest is what a metrics.k8s.io request asks of one ResourceQuery.
type ResourceRequest struct {
	// Resource is pods (container query) or nodes (node query).
	Resource schema.GroupResource
	// Namespace adds namespace="NS" on the namespaces label; "" adds nothing.
	Namespace string
	// Names selects objects on the resource label (="a", =~"a|b"); empty selects every
	// object (!="").
	Names []string
	// ExtraGroupBy is appended to GroupBy after the resource label, e.g. the container
	// label, and the namespace label for a query across namespaces.
	ExtraGroupBy []string
}

// Render renders the query for req. LabelMatchers holds namespace="NS" (when
// Namespace is set) and then the resource label's matcher; GroupBy is the resource
// label followed by ExtraGroupBy, comma-joined, and GroupBySlice the same as a slice.
// LabelValuesByName is as for Rule.CustomQuery. For a pod request with one name this
// is exactly what prometheus-adapter renders. Extra group-by labels must be Prometheus
// label names.
func (q *ResourceQuery) Render(req ResourceRequest) (string, error) {
	set := newMatcherSet()
	resLabel, err := q.res.addObjectMatchers(set, req.Namespace, req.Resource, req.Names)
	if err != nil {
		return "", err
	}
	groupBy := make([]string, 0, 1+len(req.ExtraGroupBy))
	groupBy = append(groupBy, resLabel)
	for _, l := range req.ExtraGroupBy {
		if !labelNameRE.MatchString(l) {
			return "", fmt.Errorf("group-by label %q is not a Prometheus label name", l)
		}
		groupBy = append(groupBy, l)
	}
	var sb strings.Builder
	err = q.query.Execute(&sb, queryArgs{
		LabelMatchers:     strings.Join(set.exprs, ","),
		LabelValuesByName: set.values,
		GroupBy:           strings.Join(groupBy, ","),
		GroupBySlice:      groupBy,
	})
	if err != nil {
		return "", fmt.Errorf("render %s: %w", q.query.Name(), err)
	}
	if strings.TrimSpace(sb.String()) == "" {
		return "", fmt.Errorf("%s rendered an empty query", q.query.Name())
	}
	return sb.String(), nil
}

// LabelForResource returns the label holding gr's object names (see
// Rule.LabelForResource).
func (q *ResourceQuery) LabelForResource(gr schema.GroupResource) (string, error) {
	return q.res.labelFor(gr)
}

// GroupsByResource reports whether every aggregation of the query groups by
// <<.GroupBy>> (see Rule.GroupsByResource). When it holds, every label put in GroupBy
// survives into the answer, and dropping the resource-name matcher yields a superset
// of the samples a query listing names yields, equal for those names.
func (q *ResourceQuery) GroupsByResource() bool { return q.groupsByResource }
