package provider

import (
	"context"
	"sync"

	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

var (
	podsResource       = schema.GroupResource{Resource: "pods"}
	nodesResource      = schema.GroupResource{Resource: "nodes"}
	namespacesResource = schema.GroupResource{Resource: "namespaces"}
)

// podKey identifies a pod.
type podKey struct{ namespace, name string }

// containerSamples holds, per pod, one sample per container name.
type containerSamples map[podKey]map[string]sampleValue

// podSamples asks Prometheus for rule's container samples of pods. Pods of one
// namespace take one query. Pods of several namespaces take one query across
// namespaces, grouped by the namespace label as well, when the query provably keeps
// the GroupBy labels; otherwise one query per namespace, as prometheus-adapter sends.
// Above the namespace-query threshold the pod-name matcher is dropped (pod!="") when
// the query allows it, so the query size does not grow with the number of pods.
func (p *ResourceProvider) podSamples(ctx context.Context, rule rules.ResourceRule, pods []*metav1.PartialObjectMetadata) (containerSamples, error) {
	q := rule.Container
	podLabel, err := q.LabelForResource(podsResource)
	if err != nil {
		return nil, renderError(ctx, err)
	}
	namespaces, byNS := groupByNamespace(pods)
	out := make(containerSamples, len(pods))
	if len(namespaces) > 1 && q.GroupsByResource() {
		nsLabel, err := q.LabelForResource(namespacesResource)
		if err != nil {
			return nil, renderError(ctx, err)
		}
		req := rules.ResourceRequest{Resource: podsResource, Names: distinctNames(pods), ExtraGroupBy: []string{rule.ContainerLabel, nsLabel}}
		p.dropNamesIfMany(q, &req)
		vec, err := p.renderAndQuery(ctx, rule.Backend, q, req)
		if err != nil {
			return nil, err
		}
		out.add(vec, podLabel, rule.ContainerLabel, nsLabel, "")
		return out, nil
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.opts.MaxConcurrentNamespaces)
	for _, ns := range namespaces {
		g.Go(func() error {
			req := rules.ResourceRequest{Resource: podsResource, Namespace: ns, Names: byNS[ns], ExtraGroupBy: []string{rule.ContainerLabel}}
			p.dropNamesIfMany(q, &req)
			vec, err := p.renderAndQuery(gctx, rule.Backend, q, req)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			out.add(vec, podLabel, rule.ContainerLabel, "", ns)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// nodeSamples asks Prometheus for rule's node samples of the named nodes, in one
// query, and indexes them by node name.
func (p *ResourceProvider) nodeSamples(ctx context.Context, rule rules.ResourceRule, names []string) (map[string]sampleValue, error) {
	q := rule.Node
	nodeLabel, err := q.LabelForResource(nodesResource)
	if err != nil {
		return nil, renderError(ctx, err)
	}
	req := rules.ResourceRequest{Resource: nodesResource, Names: names}
	p.dropNamesIfMany(q, &req)
	vec, err := p.renderAndQuery(ctx, rule.Backend, q, req)
	if err != nil {
		return nil, err
	}
	out := make(map[string]sampleValue, len(names))
	for _, s := range vec {
		name := string(s.Metric[model.LabelName(nodeLabel)])
		if _, dup := out[name]; name == "" || dup || !usable(s.Value, false) {
			continue
		}
		out[name] = toResourceSample(s)
	}
	return out, nil
}

// dropNamesIfMany replaces the name list of req by "every object" above the
// namespace-query threshold, when q's answer for the names is unchanged by it.
func (p *ResourceProvider) dropNamesIfMany(q *rules.ResourceQuery, req *rules.ResourceRequest) {
	t := p.opts.NamespaceQueryThreshold
	if t > 0 && len(req.Names) > t && q.GroupsByResource() {
		req.Names = nil
	}
}

// renderAndQuery renders req and sends it; failures are generic 500s, logged.
func (p *ResourceProvider) renderAndQuery(ctx context.Context, backend string, q *rules.ResourceQuery, req rules.ResourceRequest) (model.Vector, error) {
	text, err := q.Render(req)
	if err != nil {
		return nil, renderError(ctx, err)
	}
	c, err := p.clients.For(backend)
	if err != nil {
		logError(ctx, err, "No client for the rule's backend")
		return nil, apierrors.NewInternalError(errInternal)
	}
	return queryVector(ctx, c, text)
}

// queryVector sends q; a failure becomes a generic 500 with the detail logged.
func queryVector(ctx context.Context, c prom.Client, q string) (model.Vector, error) {
	v, err := c.Query(ctx, q)
	if err != nil {
		logError(ctx, err, "Querying Prometheus failed", "query", q)
		return nil, apierrors.NewInternalError(errInternal)
	}
	return v, nil
}

// add indexes vec by pod and container. The namespace is fixedNS, or when that is
// empty the value of nsLabel. Samples without a pod, container or namespace, and
// unusable ones, are skipped; the first sample of a container wins.
func (cs containerSamples) add(vec model.Vector, podLabel, containerLabel, nsLabel, fixedNS string) {
	for _, s := range vec {
		if !usable(s.Value, false) {
			continue
		}
		ns := fixedNS
		if ns == "" {
			ns = string(s.Metric[model.LabelName(nsLabel)])
		}
		pod := string(s.Metric[model.LabelName(podLabel)])
		container := string(s.Metric[model.LabelName(containerLabel)])
		if ns == "" || pod == "" || container == "" {
			continue
		}
		key := podKey{namespace: ns, name: pod}
		byContainer := cs[key]
		if byContainer == nil {
			byContainer = make(map[string]sampleValue, 2)
			cs[key] = byContainer
		}
		if _, dup := byContainer[container]; !dup {
			byContainer[container] = toResourceSample(s)
		}
	}
}

// toResourceSample is toSample with negative values served as 0, as prometheus-adapter
// does for resource metrics (a counter reset can make a rate negative).
func toResourceSample(s *model.Sample) sampleValue {
	v := toSample(s)
	if v.value < 0 {
		v.value = 0
	}
	return v
}

// groupByNamespace returns the namespaces of pods in first-seen order and the pod
// names of each.
func groupByNamespace(pods []*metav1.PartialObjectMetadata) ([]string, map[string][]string) {
	var order []string
	byNS := make(map[string][]string)
	for _, pod := range pods {
		if _, seen := byNS[pod.Namespace]; !seen {
			order = append(order, pod.Namespace)
		}
		byNS[pod.Namespace] = append(byNS[pod.Namespace], pod.Name)
	}
	return order, byNS
}

// distinctNames returns the pod names, each once, in first-seen order.
func distinctNames(pods []*metav1.PartialObjectMetadata) []string {
	seen := make(map[string]struct{}, len(pods))
	out := make([]string, 0, len(pods))
	for _, pod := range pods {
		if _, dup := seen[pod.Name]; !dup {
			seen[pod.Name] = struct{}{}
			out = append(out, pod.Name)
		}
	}
	return out
}
