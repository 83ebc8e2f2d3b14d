package chart

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// TestRegisteredAPIsAreServed renders the chart with several rule sets and requires
// every APIService it registers to be one the adapter serves, given the rendered rule
// file and --resource-metrics flag (the adapter's own decision,
// apigroups.Select): an APIService the adapter does not serve stays
// unavailable (FailedDiscoveryCheck 404), as the default values once left
// external.metrics.k8s.io.
func TestRegisteredAPIsAreServed(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		sets  []string
		want  []string // APIService names
	}{
		{"defaults (no external rules)", nil, nil,
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}},
		{"only external rules", nil, []string{"rules.default=false", "rules.external[0].seriesQuery=queue_messages_ready",
			"rules.external[0].resources.namespaced=false", "rules.external[0].metricsQuery=sum(<<.Series>>)"},
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}},
		{"no rules at all", nil, []string{"rules.default=false"},
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}},
		{"prometheus-adapter's chart CI, external rules", []string{"ci-external-rules.yaml"}, nil,
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}},
		{"platform team's prometheus-adapter values", []string{"values-platform-team.yaml"}, nil,
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}},
		{"external off", nil, []string{"adapter.apiServices.external=false"},
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}},
		{"rules.resource alone (prometheus-adapter's examples)", []string{"prometheus-adapter-rules-examples.yaml"}, nil,
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io", "v1.metrics.k8s.io", "v1beta1.metrics.k8s.io"}},
		{"resource metrics", []string{"values-full.yaml"}, nil,
			[]string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io", "v1.metrics.k8s.io", "v1beta1.metrics.k8s.io"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := mustTemplate(t, tt.files, tt.sets...)
			var registered []string
			for _, o := range objs {
				if o.GetKind() == "APIService" {
					registered = append(registered, o.GetName())
				}
			}
			slices.Sort(registered)
			want := slices.Sorted(slices.Values(tt.want))
			if !reflect.DeepEqual(registered, want) {
				t.Errorf("APIServices %v, want %v", registered, want)
			}
			adapter := findSuffix(objs, "Deployment", "-adapter")
			mode := flagValue(t, adapter, "--resource-metrics")
			var cm *unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-adapter-config") {
					cm = o
				}
			}
			data, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
			set, err := rules.Parse([]byte(data), rulefile.DefaultRESTMapper())
			if err != nil {
				t.Fatalf("rendered rule file: %v\n%s", err, data)
			}
			var served []string
			for _, gv := range apigroups.Select(mode, set).GroupVersions() {
				served = append(served, gv.Version+"."+gv.Group)
			}
			for _, name := range registered {
				if !slices.Contains(served, name) {
					t.Errorf("APIService %s registered, but the adapter (--resource-metrics=%s, this rule file) serves only %v", name, mode, served)
				}
			}
		})
	}
}

// TestResourceMetricsFlag: adapter.apiServices.resource passes
// --resource-metrics=enabled (a pod template change, so toggling it rolls the pods)
// and registers metrics.k8s.io; off, the adapter never serves it.
func TestResourceMetricsFlag(t *testing.T) {
	off := find(mustTemplate(t, nil), "Deployment", "ebbflow-adapter")
	hasArgs(t, off, "--resource-metrics=disabled")
	objs := mustTemplate(t, []string{"values-full.yaml"}) // apiServices.resource and rules.resource
	on := find(objs, "Deployment", "scaling-adapter")
	hasArgs(t, on, "--resource-metrics=enabled")
	has(t, objs, "APIService v1.metrics.k8s.io", "APIService v1beta1.metrics.k8s.io")
	if slices.Contains(containerArgs(t, on), "--resource-metrics=disabled") {
		t.Error("both enabled and disabled passed")
	}
}

// TestAutoscalerLease: the chart creates the leader-election Lease under the name
// and namespace the autoscaler elects on, so helm uninstall deletes it, and the
// Role grants get and update of that Lease only (no create, no other Lease).
func TestAutoscalerLease(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []string
		want string
	}{
		{"defaults", nil, "ebbflow-autoscaler"},
		{"renamed", []string{"fullnameOverride=scaling"}, "scaling-autoscaler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustTemplate(t, nil, tc.sets...)
			lease := find(objs, "Lease", tc.want)
			if lease == nil {
				t.Fatalf("no Lease %s; rendered %v", tc.want, kinds(objs))
			}
			if lease.GetNamespace() != namespace || lease.GetAPIVersion() != "coordination.k8s.io/v1" {
				t.Errorf("Lease %s/%s (%s), want namespace %s", lease.GetNamespace(), lease.GetName(), lease.GetAPIVersion(), namespace)
			}
			if _, ok := lease.Object["spec"]; ok {
				t.Error("the Lease has a spec: an upgrade would overwrite the holder's fields")
			}
			// The autoscaler elects on its resource name flag, defaulting to ebbflow-autoscaler.
			d := find(objs, "Deployment", tc.want)
			name := flagValue(t, d, "--leader-elect-resource-name")
			if name == "" {
				name = "ebbflow-autoscaler"
			}
			if name != tc.want || flagValue(t, d, "--leader-elect-resource-namespace") != "" || d.GetNamespace() != lease.GetNamespace() {
				t.Errorf("the autoscaler elects on %s (in its pods' namespace %s), the chart's Lease is %s/%s", name, d.GetNamespace(), lease.GetNamespace(), lease.GetName())
			}
			role := find(objs, "Role", tc.want+"-leader-election")
			if role == nil {
				t.Fatal("no leader-election Role")
			}
			rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
			wantRules := []any{map[string]any{
				"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
				"resourceNames": []any{tc.want}, "verbs": []any{"get", "update"},
			}}
			if !reflect.DeepEqual(rules, wantRules) {
				t.Errorf("leader-election Role rules\n %v\nwant\n %v", rules, wantRules)
			}
		})
	}
	objs := mustTemplate(t, nil, "autoscaler.leaderElection.enabled=false", "autoscaler.replicas=1")
	hasNot(t, objs, "Lease", "Role ")
	objs = mustTemplate(t, []string{"values-adapter-only.yaml"})
	hasNot(t, objs, "Lease")
}

// flagValue returns the value of --name=VALUE in a Deployment's first container
// args (the last one wins, as for the binaries' flag parsing), or "".
func flagValue(t *testing.T, d *unstructured.Unstructured, name string) string {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment")
	}
	v := ""
	for _, a := range containerArgs(t, d) {
		if rest, ok := strings.CutPrefix(a, name+"="); ok {
			v = rest
		}
	}
	return v
}

// findSuffix returns the first object of a kind whose name ends with suffix.
func findSuffix(objs []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), suffix) {
			return o
		}
	}
	return nil
}
