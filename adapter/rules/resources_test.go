package rules

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

func TestResources(t *testing.T) {
	groupTemplate := rulefile.ResourceMapping{Template: "kube_<<.Group>>_<<.Resource>>"}
	tests := []struct {
		name           string
		resources      rulefile.ResourceMapping
		labels         []string
		want           []schema.GroupResource
		wantNamespaced bool
	}{
		{name: "resource template, namespaced pod series",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			labels:    []string{"__name__", "container", "namespace", "pod", "instance"},
			want:      []schema.GroupResource{namespacesGR, podsGR}, wantNamespaced: true},
		{name: "resource template, cluster-scoped node series",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			labels:    []string{"node", "instance"},
			want:      []schema.GroupResource{nodesGR}},
		{name: "resource template maps grouped resources without a group part",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			labels:    []string{"deployment", "ingress", "service"},
			want:      []schema.GroupResource{deploymentsGR, ingressesGR, servicesGR}},
		{name: "plural and upper-case labels do not round-trip",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			labels:    []string{"pods", "Pod", "namespaces"}},
		{name: "ambiguous resource is skipped",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			labels:    []string{"event", "pod"},
			want:      []schema.GroupResource{podsGR}},
		{name: "group template, core group part empty",
			resources: groupTemplate,
			labels:    []string{"kube__pod", "kube__namespace", "kube__node"},
			want:      []schema.GroupResource{podsGR, namespacesGR, nodesGR}, wantNamespaced: true},
		{name: "group template, dotted and dashed groups",
			resources: groupTemplate,
			labels:    []string{"kube_apps_deployment", "kube_networking_k8s_io_ingress", "kube_example_group_io_widget"},
			want:      []schema.GroupResource{deploymentsGR, ingressesGR, widgetsGR}},
		{name: "group template disambiguates events",
			resources: groupTemplate,
			labels:    []string{"kube__event", "kube_events_k8s_io_event"},
			want:      []schema.GroupResource{coreEventsGR, eventsEventGR}},
		{name: "group template, wrong group or no prefix skipped",
			resources: groupTemplate,
			labels:    []string{"kube_apps_pod", "pod", "kube_pod", "kube_apps_gizmo", "xkube__pod"}},
		{name: "template literal text is not a regex",
			resources: rulefile.ResourceMapping{Template: "k.<<.Resource>>"},
			labels:    []string{"kxpod"}},
		{name: "overrides, singular or plural, with group",
			resources: rulefile.ResourceMapping{Overrides: map[string]rulefile.GroupResource{
				"kubernetes_namespace": {Resource: "namespaces"},
				"kubernetes_pod_name":  {Resource: "pod"},
				"microservice":         {Group: "apps", Resource: "deployment"},
			}},
			labels: []string{"kubernetes_pod_name", "microservice", "kubernetes_namespace", "pod", "namespace"},
			want:   []schema.GroupResource{podsGR, deploymentsGR, namespacesGR}, wantNamespaced: true},
		{name: "overrides and template combine; override shadows template label",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: map[string]rulefile.GroupResource{
				"microservice": {Group: "apps", Resource: "deployments"},
			}},
			labels: []string{"deployment", "microservice", "pod", "namespace"},
			want:   []schema.GroupResource{deploymentsGR, podsGR, namespacesGR}, wantNamespaced: true},
		{name: "template label shadowed by override is not mapped",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: map[string]rulefile.GroupResource{
				"microservice": {Group: "apps", Resource: "deployments"},
			}},
			labels: []string{"deployment", "pod"},
			want:   []schema.GroupResource{podsGR}},
		{name: "two overrides for one resource: the smaller label wins",
			resources: rulefile.ResourceMapping{Overrides: map[string]rulefile.GroupResource{
				"pod_name": {Resource: "pods"}, "b_pod": {Resource: "pods"},
			}},
			labels: []string{"pod_name", "b_pod"},
			want:   []schema.GroupResource{podsGR}},
		{name: "duplicates reported once",
			resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: map[string]rulefile.GroupResource{
				"pod": {Resource: "pods"},
			}},
			labels: []string{"pod", "pod"},
			want:   []schema.GroupResource{podsGR}},
		{name: "no mapping at all",
			labels: []string{"pod", "namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, rulefile.DiscoveryRule{Resources: tt.resources, MetricsQuery: "<<.Series>>"})
			got, namespaced := r.Resources(tt.labels)
			if !reflect.DeepEqual(got, tt.want) || namespaced != tt.wantNamespaced {
				t.Errorf("Resources(%q) = %v, %v; want %v, %v", tt.labels, got, namespaced, tt.want, tt.wantNamespaced)
			}
			for _, gr := range got {
				if _, err := r.LabelForResource(gr); err != nil {
					t.Errorf("LabelForResource(%v) after Resources: %v", gr, err)
				}
			}
		})
	}
}

func TestLabelForResource(t *testing.T) {
	overrides := map[string]rulefile.GroupResource{
		"kubernetes_namespace": {Resource: "namespace"},
		"microservice":         {Group: "apps", Resource: "deployments"},
	}
	tests := []struct {
		name      string
		resources rulefile.ResourceMapping
		gr        schema.GroupResource
		want      string
		wantErr   string
	}{
		{name: "resource template", resources: rulefile.ResourceMapping{Template: "<<.Resource>>"}, gr: podsGR, want: "pod"},
		{name: "group template, core", resources: rulefile.ResourceMapping{Template: "kube_<<.Group>>_<<.Resource>>"},
			gr: namespacesGR, want: "kube__namespace"},
		{name: "group template, dots", resources: rulefile.ResourceMapping{Template: "kube_<<.Group>>_<<.Resource>>"},
			gr: ingressesGR, want: "kube_networking_k8s_io_ingress"},
		{name: "group template, dashes", resources: rulefile.ResourceMapping{Template: "kube_<<.Group>>_<<.Resource>>"},
			gr: widgetsGR, want: "kube_example_group_io_widget"},
		{name: "override first", resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: overrides},
			gr: deploymentsGR, want: "microservice"},
		{name: "override normalised from singular", resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: overrides},
			gr: namespacesGR, want: "kubernetes_namespace"},
		{name: "template when no override", resources: rulefile.ResourceMapping{Template: "<<.Resource>>", Overrides: overrides},
			gr: podsGR, want: "pod"},
		{name: "no override, no template", resources: rulefile.ResourceMapping{Overrides: overrides},
			gr: podsGR, wantErr: "no resources.template"},
		{name: "template output not a label name", resources: rulefile.ResourceMapping{Template: "kube-<<.Resource>>"},
			gr: podsGR, wantErr: "not a Prometheus label name"},
		{name: "unknown resource", resources: rulefile.ResourceMapping{Template: "<<.Resource>>"},
			gr: schema.GroupResource{Resource: "gizmos"}, wantErr: "no label for gizmos"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustCompile(t, rulefile.DiscoveryRule{Resources: tt.resources, MetricsQuery: "<<.Series>>"})
			for range 2 { // the second call is served from the cache
				got, err := r.LabelForResource(tt.gr)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("LabelForResource error = %v, want one containing %q", err, tt.wantErr)
					}
					continue
				}
				if err != nil || got != tt.want {
					t.Fatalf("LabelForResource(%v) = %q, %v; want %q", tt.gr, got, err, tt.want)
				}
			}
		})
	}
}

// TestConcurrentUse exercises the label cache from many goroutines (meaningful under -race).
func TestConcurrentUse(t *testing.T) {
	r := mustCompile(t, rulefile.DiscoveryRule{
		Resources:    rulefile.ResourceMapping{Template: "kube_<<.Group>>_<<.Resource>>"},
		MetricsQuery: "sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, ns := r.Resources([]string{"kube__namespace", "kube_apps_deployment"})
				if len(got) != 2 || !ns {
					t.Errorf("Resources = %v, %v", got, ns)
					return
				}
				q, err := r.CustomQuery(CustomRequest{Series: "m", Namespace: "n", Resource: deploymentsGR, Names: []string{"d"}})
				if err != nil || q != `sum(m{kube__namespace="n",kube_apps_deployment="d"}) by (kube_apps_deployment)` {
					t.Errorf("CustomQuery = %q, %v", q, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
