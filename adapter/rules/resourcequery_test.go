package rules

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func resourceRulesFor(container, node, containerLabel string, overrides map[string]rulefile.GroupResource) rulefile.ResourceRules {
	r := rulefile.ResourceRule{
		ContainerQuery: container, NodeQuery: node, ContainerLabel: containerLabel,
		Resources: rulefile.ResourceMapping{Overrides: overrides},
	}
	return rulefile.ResourceRules{CPU: r, Memory: r, Window: model.Duration(300e9)}
}

var kubePrometheusOverrides = map[string]rulefile.GroupResource{
	"node": {Resource: "node"}, "namespace": {Resource: "namespace"}, "pod": {Resource: "pod"},
}

func TestResourceQueryRender(t *testing.T) {
	const container = `sum by (<<.GroupBy>>) (irate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!="",pod!=""}[4m]))`
	const node = `sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>}) # <<index .LabelValuesByName "node">>`
	rr, err := CompileResourceRules(resourceRulesFor(container, node, "container", kubePrometheusOverrides), testMapper())
	if err != nil {
		t.Fatal(err)
	}
	if rr.Window.String() != "5m0s" || rr.CPU.ContainerLabel != "container" {
		t.Errorf("window %v container label %q", rr.Window, rr.CPU.ContainerLabel)
	}
	for _, tc := range []struct {
		name string
		q    *ResourceQuery
		req  ResourceRequest
		want string
	}{
		{"one pod, as prometheus-adapter", rr.CPU.Container,
			ResourceRequest{Resource: podsGR, Namespace: "shop", Names: []string{"web-1"}, ExtraGroupBy: []string{"container"}},
			`sum by (pod,container) (irate(container_cpu_usage_seconds_total{namespace="shop",pod="web-1",container!="",pod!=""}[4m]))`},
		{"several pods", rr.CPU.Container,
			ResourceRequest{Resource: podsGR, Namespace: "shop", Names: []string{"web-1", "a.b"}, ExtraGroupBy: []string{"container"}},
			`sum by (pod,container) (irate(container_cpu_usage_seconds_total{namespace="shop",pod=~"web-1|a\\.b",container!="",pod!=""}[4m]))`},
		{"every pod of every namespace", rr.CPU.Container,
			ResourceRequest{Resource: podsGR, ExtraGroupBy: []string{"container", "namespace"}},
			`sum by (pod,container,namespace) (irate(container_cpu_usage_seconds_total{pod!="",container!="",pod!=""}[4m]))`},
		{"nodes", rr.Memory.Node,
			ResourceRequest{Resource: nodesGR, Names: []string{"n1", "n2"}},
			`sum by (node) (node_memory_working_set_bytes{node=~"n1|n2"}) # n1|n2`},
		{"hostile namespace stays a string", rr.CPU.Container,
			ResourceRequest{Resource: podsGR, Namespace: "x\"}) or vector(1) #", Names: []string{"p"}, ExtraGroupBy: []string{"container"}},
			`sum by (pod,container) (irate(container_cpu_usage_seconds_total{namespace="x\"}) or vector(1) #",pod="p",container!="",pod!=""}[4m]))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.q.Render(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if !rr.CPU.Container.GroupsByResource() {
		t.Error("the kube-prometheus container query groups by <<.GroupBy>>")
	}
	if _, err := rr.CPU.Container.Render(ResourceRequest{Resource: podsGR, ExtraGroupBy: []string{"bad-label"}}); err == nil {
		t.Error("a group-by label that is not a label name rendered")
	}
}

func TestCompileResourceRulesErrors(t *testing.T) {
	const q = `sum by (<<.GroupBy>>) (x{<<.LabelMatchers>>})`
	for _, tc := range []struct {
		name string
		cfg  rulefile.ResourceRules
		want string
	}{
		{"bad template", resourceRulesFor("<<.X", q, "container", kubePrometheusOverrides), "containerQuery"},
		{"bad node template", resourceRulesFor(q, "<<end>>", "container", kubePrometheusOverrides), "nodeQuery"},
		{"unknown resource", resourceRulesFor(q, q, "container", map[string]rulefile.GroupResource{"node": {Resource: "nodez"}}), "nodez"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileResourceRules(tc.cfg, testMapper())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
