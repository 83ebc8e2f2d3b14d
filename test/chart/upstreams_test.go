package chart

import (
	"slices"
	"strings"
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

// TestUpstreamsMounted checks that the adapter's pods read the rendered
// upstreams file: the flag names a file inside the ConfigMap's mount, each
// caSecretName's Secret is mounted where the file's caFile points, and a
// change of adapter.upstreams rolls the pods (the file is read at start).
func TestUpstreamsMounted(t *testing.T) {
	objs := mustTemplate(t, []string{"upstreams.yaml"})
	d := find(objs, "Deployment", "ebbflow-adapter")
	if d == nil {
		t.Fatalf("no adapter Deployment in %v", kinds(objs))
	}
	if !slices.Contains(containerArgs(t, d), "--upstreams-file=/etc/ebbflow-upstreams/upstreams.yaml") {
		t.Errorf("adapter args %v lack --upstreams-file", containerArgs(t, d))
	}
	mounts := map[string]string{} // mount path -> volume name
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	vms, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	for _, m := range vms {
		mm := m.(map[string]any)
		mounts[mm["mountPath"].(string)] = mm["name"].(string)
	}
	sources := map[string]map[string]any{} // volume name -> volume
	vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		vm := v.(map[string]any)
		sources[vm["name"].(string)] = vm
	}
	if cm, _, _ := unstructured.NestedString(sources[mounts["/etc/ebbflow-upstreams"]], "configMap", "name"); cm != "ebbflow-adapter-upstreams" {
		t.Errorf("/etc/ebbflow-upstreams mounts %v, want ConfigMap ebbflow-adapter-upstreams", sources[mounts["/etc/ebbflow-upstreams"]])
	}
	if s, _, _ := unstructured.NestedString(sources[mounts["/etc/ebbflow-upstreams-ca/keda"]], "secret", "secretName"); s != "keda-ca" {
		t.Errorf("/etc/ebbflow-upstreams-ca/keda mounts %v, want Secret keda-ca (the rendered caFile's directory)", sources[mounts["/etc/ebbflow-upstreams-ca/keda"]])
	}
	annotation := func(objs []*unstructured.Unstructured) string {
		a, _, _ := unstructured.NestedString(find(objs, "Deployment", "ebbflow-adapter").Object, "spec", "template", "metadata", "annotations", "checksum/upstreams")
		return a
	}
	changed := mustTemplate(t, []string{"upstreams.yaml"}, "adapter.upstreams[0].timeout=4s")
	if a, b := annotation(objs), annotation(changed); a == "" || a == b {
		t.Errorf("checksum/upstreams %q -> %q: a change of adapter.upstreams must roll the pods", a, b)
	}
	plain := find(mustTemplate(t, nil), "Deployment", "ebbflow-adapter")
	for _, arg := range containerArgs(t, plain) {
		if strings.HasPrefix(arg, "--upstreams-file") {
			t.Errorf("without upstreams the adapter gets %s", arg)
		}
	}
}
