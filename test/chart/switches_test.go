package chart

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

var (
	customAPIs   = []string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}
	externalAPIs = []string{"v1beta1.external.metrics.k8s.io"}
	resourceAPIs = []string{"v1.metrics.k8s.io", "v1beta1.metrics.k8s.io"}
)

// resourceRules is a rules.resource of the test (its content is the
// adapter's to check).
const resourceRules = `rules.resource={"window":"3m"}`

// TestAPIServiceSwitches: each metrics API group is registered on its own
// switch (adapter.apiServices.custom, .external, .resource), the earlier
// names still switch them (adapter.apiService.create: custom and external;
// adapter.resourceMetrics.enabled: resource), and rules.resource alone
// registers metrics.k8s.io as prometheus-adapter's chart does. The metrics
// reader role grants only the groups registered; the adapter serves
// metrics.k8s.io exactly when it is registered.
func TestAPIServiceSwitches(t *testing.T) {
	cat := func(l ...[]string) []string { return slices.Sorted(slices.Values(slices.Concat(l...))) }
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{"defaults", nil, cat(customAPIs, externalAPIs)},
		{"external off (KEDA owns it)", []string{"adapter.apiServices.external=false"}, cat(customAPIs)},
		{"custom off", []string{"adapter.apiServices.custom=false"}, cat(externalAPIs)},
		{"rules.resource alone", []string{resourceRules}, cat(customAPIs, externalAPIs, resourceAPIs)},
		{"rules.resource, resource off", []string{resourceRules, "adapter.apiServices.resource=false"}, cat(customAPIs, externalAPIs)},
		{"resource only", []string{resourceRules, "adapter.apiServices.custom=false", "adapter.apiServices.external=false"}, cat(resourceAPIs)},
		{"resource true with rules.existing", []string{`rules.existing="mine"`, "adapter.apiServices.resource=true"}, cat(customAPIs, externalAPIs, resourceAPIs)},
		{"rules.existing, resource auto", []string{`rules.existing="mine"`}, cat(customAPIs, externalAPIs)},
		{"earlier name: apiService.create false", []string{"adapter.apiService.create=false"}, nil},
		{"earlier name: resourceMetrics.enabled", []string{resourceRules, "adapter.resourceMetrics.enabled=false"}, cat(customAPIs, externalAPIs)},
		{"earlier name: resourceMetrics.enabled true", []string{`rules.existing="mine"`, "adapter.resourceMetrics.enabled=true"}, cat(customAPIs, externalAPIs, resourceAPIs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := renderJSON(t, nil, tc.set...)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.apiServices(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("APIServices %v, want %v", got, tc.want)
			}
			resource := slices.Contains(tc.want, resourceAPIs[0])
			mode := map[bool]string{true: "enabled", false: "disabled"}[resource]
			if err := r.hasArg(t, "--resource-metrics="+mode); err != nil {
				t.Error(err)
			}
			if got := find(r.objs, "ClusterRole", "ebbflow-adapter-resource-metrics-reader") != nil; got != resource {
				t.Errorf("resource metrics reader role rendered: %v, want %v", got, resource)
			}
			roles := toYAML(t, find(r.objs, "ClusterRole", "ebbflow-adapter-metrics-reader").Object["rules"])
			for group, apis := range map[string][]string{"custom.metrics.k8s.io": customAPIs, "external.metrics.k8s.io": externalAPIs} {
				if want := slices.Contains(tc.want, apis[0]); strings.Contains(roles, group) != want {
					t.Errorf("metrics reader role grants %s: %v, want %v:\n%s", group, !want, want, roles)
				}
			}
		})
	}
}

// TestUnknownKeysRefused: values.schema.json refuses a key the chart does not
// know, in either layout and at any depth, naming it; and the values other
// engineers' templates read (adapter.upstreams) pass it.
func TestUnknownKeysRefused(t *testing.T) {
	for _, tc := range []struct{ set, where, key string }{
		{"replica=2", "at ''", "'replica'"},
		{"adapter.replica=2", "at '/adapter'", "'replica'"},
		{"serviceAccount.annotation={}", "at '/serviceAccount'", "'annotation'"},
		{"adapter.serviceAccount.annotation={}", "at '/adapter/serviceAccount'", "'annotation'"},
		{"rbac.bindHPAController=true", "at '/rbac'", "'bindHPAController'"},
		{"psp={\"create\":true}", "at ''", "'psp'"},
		{"autoscaler.hpamode=\"all\"", "at '/autoscaler'", "'hpamode'"},
		{"adapter.apiServices.externl=false", "at '/adapter/apiServices'", "'externl'"},
		{`adapter.upstreams=[{"name":"keda","groupz":["external.metrics.k8s.io"]}]`, "at '/adapter/upstreams/0'", "'groupz'"},
	} {
		_, err := renderJSON(t, nil, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.where) || !strings.Contains(err.Error(), "additional properties "+tc.key+" not allowed") {
			t.Errorf("%s: error %v, want one naming %s %s", tc.set, err, tc.key, tc.where)
		}
	}
	for _, tc := range []struct{ set, where string }{
		{"adapter.apiServices.resource=\"yes\"", "/adapter/apiServices/resource"},
		{"replicas=\"two\"", "/replicas"},
	} {
		if _, err := renderJSON(t, nil, tc.set); err == nil || !strings.Contains(err.Error(), tc.where) {
			t.Errorf("%s: error %v, want one naming %s", tc.set, err, tc.where)
		}
	}
	upstreams := `adapter.upstreams=[{"name":"keda","service":{"namespace":"keda","name":"keda-operator-metrics-apiserver","port":443},` +
		`"groups":["external.metrics.k8s.io"],"caSecretName":"keda-ca","timeout":"5s"},` +
		`{"name":"old","url":"https://10.0.0.9:6443","groups":["custom.metrics.k8s.io"],"caBundle":"LS0t","insecureSkipTLSVerify":false}]`
	if _, err := renderJSON(t, nil, upstreams); err != nil {
		t.Errorf("adapter.upstreams refused: %v", err)
	}
}

// TestBindingsFollowServiceAccountName: with serviceAccount.name (the name an
// IAM role or workload identity trusts), every binding of the adapter's own
// identity, the upstreams' included, names that account.
func TestBindingsFollowServiceAccountName(t *testing.T) {
	r, err := renderJSON(t, []string{"upstreams.yaml"}, `serviceAccount.name="metrics"`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range r.objs {
		if !strings.HasSuffix(o.GetKind(), "RoleBinding") || !strings.HasPrefix(o.GetName(), "ebbflow-adapter") ||
			slices.Contains([]string{"ebbflow-adapter-hpa-metrics-reader", "ebbflow-adapter-self-metrics"}, o.GetName()) {
			continue
		}
		n++
		if s := toYAML(t, o.Object["subjects"]); !strings.Contains(s, "name: metrics\n") {
			t.Errorf("%s binds %s", key(o), s)
		}
	}
	if n < 4 {
		t.Errorf("%d bindings of the adapter's identity checked, want the auth delegator, auth reader, resource reader and upstreams", n)
	}
}
