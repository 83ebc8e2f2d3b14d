package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// kube-dns-autoscaler as the seed article and Kubernetes' dns-horizontal-
// autoscaler addon deploy it: the namespace through MY_POD_NAMESPACE, the
// ConfigMap beside it.
const dnsAutoscaler = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kube-dns-autoscaler
  namespace: kube-system
spec:
  selector: {matchLabels: {k8s-app: kube-dns-autoscaler}}
  template:
    metadata: {labels: {k8s-app: kube-dns-autoscaler}}
    spec:
      containers:
      - name: autoscaler
        image: registry.k8s.io/cpa/cluster-proportional-autoscaler:v1.10.3
        env:
        - name: MY_POD_NAMESPACE
          valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
        command:
        - /cluster-proportional-autoscaler
        - --namespace=$(MY_POD_NAMESPACE)
        - --configmap=kube-dns-autoscaler
        - --target=Deployment/kube-dns
        - --default-params={"linear":{"coresPerReplica":256,"nodesPerReplica":16,"preventSinglePointFailure":true,"includeUnschedulableNodes":true}}
        - --nodelabels
        - pool=system
        - --logtostderr=true
        - --v=2
`

const dnsConfigMap = `
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-dns-autoscaler, namespace: kube-system}
data:
  linear: '{"nodesPerReplica": 10, "min": 1, "max": 50, "preventSinglePointFailure": true}'
`

func parseManifests(t *testing.T, out string) []autoscalerManifest {
	t.Helper()
	var ms []autoscalerManifest
	for _, doc := range strings.Split(out, "---\n") {
		var m autoscalerManifest
		if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
			t.Fatalf("%v in:\n%s", err, out)
		}
		// The manifest has the shape of the API's types, field for field.
		var typed v1alpha1.Autoscaler
		if err := yaml.UnmarshalStrict([]byte(doc), &typed); err != nil {
			t.Fatalf("not an Autoscaler of the API: %v in:\n%s", err, doc)
		}
		if typed.APIVersion != v1alpha1.SchemeGroupVersion.String() || typed.Spec.Metrics[0].Type != v1alpha1.ClusterProportionalMetricSourceType {
			t.Fatalf("API version or metric type: %+v", typed)
		}
		ms = append(ms, m)
	}
	return ms
}

// checkFaithful: the manifest's params are valid and give what CPA's params
// give on every cluster of a grid, minReplicas and maxReplicas never clamp
// that answer, and behavior lets every change through at once.
func checkFaithful(t *testing.T, m autoscalerManifest, cpa proportional.Params) {
	t.Helper()
	src := m.Spec.Metrics[0].ClusterProportional
	p := proportional.Params{Linear: src.Linear, Ladder: src.Ladder}
	if src.ConfigMapRef != nil {
		// The API takes exactly one of linear, ladder and configMapRef;
		// the ConfigMap holds CPA's params.
		if p.Linear != nil || p.Ladder != nil {
			t.Fatalf("configMapRef with inline params: %+v", src)
		}
		p = cpa
	}
	if errs := append(proportional.Validate(p, field.NewPath("clusterProportional")), proportional.Hazards(p, nil)...); len(errs) > 0 {
		t.Fatalf("manifest params: %v", errs)
	}
	lo, hi := m.Spec.MinReplicas, m.Spec.MaxReplicas
	for nodes := 0; nodes <= 400; nodes += 7 {
		for _, perNode := range []int{0, 1, 2, 4, 16, 96} {
			size := proportional.ClusterSize{Nodes: nodes + nodes/10, Cores: (nodes + nodes/10) * perNode, SchedulableNodes: nodes, SchedulableCores: nodes * perNode}
			got, want := proportional.Replicas(p, size), proportional.Replicas(cpa, size)
			if got != want {
				t.Fatalf("%+v: manifest gives %d, CPA %d", size, got, want)
			}
			// The one clamp: CPA's 0 stays at minReplicas 1 (an Autoscaler
			// scales to zero only through Object or External metrics).
			if (want < lo && !(want == 0 && lo == 1)) || want > hi {
				t.Fatalf("%+v: CPA's %d is clamped by [%d, %d]", size, want, lo, hi)
			}
		}
	}
	b := m.Spec.Behavior
	up, down := b.ScaleUp, b.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || *down.StabilizationWindowSeconds != 0 ||
		up.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: hi, PeriodSeconds: 1}) ||
		down.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}) {
		t.Errorf("behavior %+v %+v", up, down)
	}
}

func mustParams(t *testing.T, data map[string]string) proportional.Params {
	t.Helper()
	p, err := proportional.ParseConfigMap(data, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFromCPADeploymentAndConfigMap(t *testing.T) {
	out, stderr, err := runSplit(t, dnsConfigMap+"---\n"+dnsAutoscaler, "proportional", "from-cpa", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	ms := parseManifests(t, out)
	if len(ms) != 1 {
		t.Fatalf("%d manifests", len(ms))
	}
	m := ms[0]
	if m.APIVersion != "autoscaling.ebbflow.dev/v1alpha1" || m.Kind != "Autoscaler" || m.Metadata != (objectMeta{"kube-dns", "kube-system"}) ||
		m.Spec.ScaleTargetRef != (autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "kube-dns"}) {
		t.Errorf("%+v", m)
	}
	// The ConfigMap's params, not --default-params: min 1, max 50.
	if m.Spec.MinReplicas != 1 || m.Spec.MaxReplicas != 50 {
		t.Errorf("bounds [%d, %d]", m.Spec.MinReplicas, m.Spec.MaxReplicas)
	}
	src := m.Spec.Metrics[0].ClusterProportional
	if m.Spec.Metrics[0].Type != "ClusterProportional" || src.ConfigMapRef.Name != "kube-dns-autoscaler" || src.ConfigMapRef.Key != "" ||
		src.NodeSelector.MatchLabels["pool"] != "system" {
		t.Errorf("metric %+v", m.Spec.Metrics[0])
	}
	checkFaithful(t, m, mustParams(t, map[string]string{"linear": `{"nodesPerReplica": 10, "max": 50, "preventSinglePointFailure": true}`}))
	if !strings.Contains(stderr, "ConfigMap kube-dns-autoscaler exists: its params are used, not --default-params") || strings.Contains(stderr, "must exist") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestFromCPADefaultParams(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cpa.yaml")
	if err := os.WriteFile(file, []byte(dnsAutoscaler), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runSplit(t, "", "proportional", "from-cpa", "-f", file, "--configmap-ref=false")
	if err != nil {
		t.Fatal(err)
	}
	m := parseManifests(t, out)[0]
	if m.Spec.MinReplicas != 1 || m.Spec.MaxReplicas != defaultUnboundedMax || m.Spec.Metrics[0].ClusterProportional.ConfigMapRef != nil {
		t.Errorf("%+v", m.Spec)
	}
	checkFaithful(t, m, mustParams(t, map[string]string{"linear": `{"coresPerReplica":256,"nodesPerReplica":16,"preventSinglePointFailure":true,"includeUnschedulableNodes":true}`}))
	if !strings.Contains(stderr, "CPA's params set no maximum: maxReplicas is 1000000") {
		t.Errorf("stderr %q", stderr)
	}
	out, _, err = runSplit(t, "", "proportional", "from-cpa", "-f", file, "--max-replicas", "30", "--name", "dns")
	if m := parseManifests(t, out)[0]; err != nil || m.Spec.MaxReplicas != 30 || m.Metadata.Name != "dns" {
		t.Errorf("%v %+v", err, m)
	}
}

// Flags only: a ladder with a step of 0 (CPA's README's optional feature)
// keeps minReplicas 1, with a warning; several targets, one Autoscaler each.
func TestFromCPAFlags(t *testing.T) {
	ladder := `{"ladder":{"nodesToReplicas":[[0,0],[6,1],[50,3]],"coresToReplicas":[[0,0],[512,2]]}}`
	out, stderr, err := runSplit(t, "", "proportional", "from-cpa", "--namespace", "tools", "--configmap", "opt",
		"--target", "Deployment/Feature, replicaset/feature", "--default-params", ladder)
	if err != nil {
		t.Fatal(err)
	}
	ms := parseManifests(t, out)
	if len(ms) != 2 || ms[0].Metadata.Name != "feature" || ms[1].Metadata.Name != "feature-replicaset" || ms[1].Spec.ScaleTargetRef.Kind != "ReplicaSet" {
		t.Fatalf("%+v", ms)
	}
	for _, m := range ms {
		if m.Spec.MinReplicas != 1 || m.Spec.MaxReplicas != 3 || m.Spec.Metrics[0].ClusterProportional.ConfigMapRef.Name != "opt" {
			t.Errorf("bounds [%d, %d]", m.Spec.MinReplicas, m.Spec.MaxReplicas)
		}
		checkFaithful(t, m, mustParams(t, map[string]string{"ladder": `{"nodesToReplicas":[[0,0],[6,1],[50,3]],"coresToReplicas":[[0,0],[512,2]]}`}))
	}
	if !strings.Contains(stderr, "the ladder gives 0 replicas on some clusters, where CPA scales the target to zero; the Autoscaler keeps minReplicas 1") ||
		!strings.Contains(stderr, "the Autoscaler reads ConfigMap tools/opt, which must exist") {
		t.Errorf("stderr %q", stderr)
	}
}

// kubectl get -o yaml gives a List; a short ladder row is written out as CPA
// reads it.
func TestFromCPAList(t *testing.T) {
	list := `{"apiVersion": "v1", "kind": "List", "items": [
	  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"ladder": "{\"coresToReplicas\": [[1, 1], [64, 3]]}"}},
	  {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "cpa", "namespace": "web"}, "spec": {"template": {"spec": {"containers": [
	    {"name": "sidecar", "image": "x"},
	    {"name": "cpa", "image": "cpa", "args": ["--target=deployment/api", "--configmap", "cm", "--namespace=web", "--poll-period-seconds=5"]}]}}}},
	  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ignored"}}]}`
	out, stderr, err := runSplit(t, list, "proportional", "from-cpa", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	m := parseManifests(t, out)[0]
	if m.Metadata != (objectMeta{"api", "web"}) || m.Spec.MinReplicas != 1 || m.Spec.MaxReplicas != 3 {
		t.Errorf("%+v", m)
	}
	checkFaithful(t, m, mustParams(t, map[string]string{"ladder": `{"coresToReplicas": [[1, 1], [64, 3]]}`}))
	if !strings.Contains(stderr, "--poll-period-seconds has no equivalent") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestFromCPAErrors(t *testing.T) {
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{name: "no params", args: []string{"--target", "deployment/a", "--configmap", "cm", "--namespace", "ns"},
			want: "flags: no params: give CPA's ConfigMap cm in the input"},
		{name: "missing flags", args: []string{"--target", "deployment/a"}, want: "--configmap, --namespace not set"},
		{name: "hazard", args: []string{"--target", "deployment/a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"ladder":{}}`},
			want: "hazards an Autoscaler rejects"},
		{name: "invalid default params", args: []string{"--target", "deployment/a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"linear":{"min":-1,"nodesPerReplica":1}}`},
			want: "--default-params (CPA would create a ConfigMap it then rejects): data[linear].min: Invalid value: -1"},
		{name: "invalid ConfigMap", stdin: strings.Replace(dnsConfigMap, `"min": 1`, `"min": 1.5`, 1) + "---\n" + dnsAutoscaler, args: []string{"-f", "-"},
			want: "ConfigMap kube-system/kube-dns-autoscaler is invalid (CPA rejects it too and does not scale)"},
		{name: "unknown kind", args: []string{"--target", "daemonset/a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"linear":{"nodesPerReplica":1}}`},
			want: `kind "daemonset" is not one CPA scales`},
		{name: "malformed target", args: []string{"--target", "a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"linear":{"nodesPerReplica":1}}`},
			want: "want KIND/NAME"},
		{name: "bad selector", args: []string{"--target", "deployment/a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"linear":{"nodesPerReplica":1}}`, "--nodelabels", "a in b"},
			want: `--nodelabels "a in b"`},
		{name: "name with two targets", args: []string{"--target", "deployment/a,deployment/b", "--configmap", "cm", "--namespace", "ns", "--name", "x"},
			want: "--name needs exactly one target"},
		{name: "no CPA deployment", stdin: dnsConfigMap, args: []string{"-f", "-"}, want: "no Deployment runs cluster-proportional-autoscaler"},
		{name: "max below min", args: []string{"--target", "deployment/a", "--configmap", "cm", "--namespace", "ns", "--default-params", `{"linear":{"nodesPerReplica":1,"min":5}}`, "--max-replicas", "3"},
			want: "--max-replicas 3 is below the params' min 5"},
		{name: "not YAML", stdin: "kind: [", args: []string{"-f", "-"}, want: "-: document 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSplit(t, tt.stdin, append([]string{"proportional", "from-cpa"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"NS": "kube-system"}
	for in, want := range map[string]string{
		"--namespace=$(NS)": "--namespace=kube-system", "$(UNKNOWN)x": "$(UNKNOWN)x", "$$(NS)": "$(NS)", "a$": "a$", "$(NS": "$(NS", "$x": "$x",
	} {
		if got := expandEnv(in, env); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
