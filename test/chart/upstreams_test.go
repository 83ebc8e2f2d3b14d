package chart

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ebbflow/ebbflow/adapter/upstream"
)

// TestUpstreamsFile: adapter.upstreams renders an upstreams file that
// ebbflow-adapter loads as written (a caSecretName becomes the file the Secret
// is mounted as), and a ClusterRole granting exactly the groups forwarded.
func TestUpstreamsFile(t *testing.T) {
	objs := mustTemplate(t, []string{"upstreams.yaml"})
	cm := find(objs, "ConfigMap", "ebbflow-adapter-upstreams")
	if cm == nil {
		t.Fatalf("no upstreams ConfigMap in %v", kinds(objs))
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "upstreams.yaml")
	ups, err := upstream.Parse([]byte(data))
	if err != nil {
		t.Fatalf("the rendered upstreams file does not load: %v\n%s", err, data)
	}
	if len(ups) != 2 || ups[0].CAFile != "/etc/ebbflow-upstreams-ca/keda/ca.crt" || ups[0].BaseURL() != "https://keda-operator-metrics-apiserver.keda.svc:443" ||
		ups[0].RequestTimeout().String() != "3s" || !ups[1].InsecureSkipTLSVerify {
		t.Errorf("rendered upstreams %+v", ups)
	}
	role := find(objs, "ClusterRole", "ebbflow-adapter-upstreams")
	if role == nil {
		t.Fatal("no upstreams ClusterRole")
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	groups, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "apiGroups")
	if !slices.Equal(groups, []string{"custom.metrics.k8s.io", "external.metrics.k8s.io"}) || len(rules) != 1 {
		t.Errorf("upstreams ClusterRole rules %v, want get and list in the two forwarded groups", rules)
	}
	one := mustTemplate(t, nil, "adapter.upstreams[0].name=k", "adapter.upstreams[0].url=https://k", "adapter.upstreams[0].groups[0]=external.metrics.k8s.io", "adapter.upstreams[0].insecureSkipTLSVerify=true")
	role = find(one, "ClusterRole", "ebbflow-adapter-upstreams")
	rules, _, _ = unstructured.NestedSlice(role.Object, "rules")
	if groups, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "apiGroups"); !slices.Equal(groups, []string{"external.metrics.k8s.io"}) {
		t.Errorf("one external upstream: apiGroups %v, want external.metrics.k8s.io only", groups)
	}
	if find(mustTemplate(t, nil), "ClusterRole", "ebbflow-adapter-upstreams") != nil {
		t.Error("upstreams RBAC rendered without upstreams")
	}
}
