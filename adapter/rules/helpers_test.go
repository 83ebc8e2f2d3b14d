package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

var (
	podsGR        = schema.GroupResource{Resource: "pods"}
	nodesGR       = schema.GroupResource{Resource: "nodes"}
	servicesGR    = schema.GroupResource{Resource: "services"}
	deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}
	ingressesGR   = schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}
	widgetsGR     = schema.GroupResource{Group: "example-group.io", Resource: "widgets"}
	coreEventsGR  = schema.GroupResource{Resource: "events"}
	eventsEventGR = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
)

// testMapper knows a few core and grouped resources, with their singulars. Events exist
// in two groups with the same singular, to exercise ambiguity.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, r := range []struct {
		group, kind, plural, singular string
		scope                         meta.RESTScope
	}{
		{"", "Pod", "pods", "pod", meta.RESTScopeNamespace},
		{"", "Namespace", "namespaces", "namespace", meta.RESTScopeRoot},
		{"", "Node", "nodes", "node", meta.RESTScopeRoot},
		{"", "Service", "services", "service", meta.RESTScopeNamespace},
		{"", "Event", "events", "event", meta.RESTScopeNamespace},
		{"apps", "Deployment", "deployments", "deployment", meta.RESTScopeNamespace},
		{"networking.k8s.io", "Ingress", "ingresses", "ingress", meta.RESTScopeNamespace},
		{"events.k8s.io", "Event", "events", "event", meta.RESTScopeNamespace},
		{"example-group.io", "Widget", "widgets", "widget", meta.RESTScopeNamespace},
	} {
		gv := schema.GroupVersion{Group: r.group, Version: "v1"}
		m.AddSpecific(gv.WithKind(r.kind), gv.WithResource(r.plural), gv.WithResource(r.singular), r.scope)
	}
	return m
}

// mustCompile compiles rule as a custom rule with the test mapper.
func mustCompile(t *testing.T, rule rulefile.DiscoveryRule) *Rule {
	t.Helper()
	return mustCompileKind(t, rule, Custom)
}

func mustCompileKind(t *testing.T, rule rulefile.DiscoveryRule, kind Kind) *Rule {
	t.Helper()
	r, err := Compile(rule, 0, kind, testMapper())
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return r
}

// mustParse parses a Kubernetes label selector.
func mustParse(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatalf("labels.Parse(%q): %v", s, err)
	}
	return sel
}

func boolPtr(b bool) *bool { return &b }
