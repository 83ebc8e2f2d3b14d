package chart

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/test/buildtools"
)

// valueFiles are the value sets under testdata/ that `helm lint` checks.
func valueFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no value files in testdata (%v)", err)
	}
	var out []string
	for _, f := range files {
		if !strings.Contains(f, "default-config") { // a rule file, not values
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

func TestHelmLint(t *testing.T) {
	helm := tool(t, "HELM")
	for _, f := range append([]string{""}, valueFiles(t)...) {
		args := []string{"lint", "--strict", "charts/ebbflow", "--namespace", namespace}
		if f != "" {
			args = append(args, "--values", filepath.Join("test", "chart", "testdata", f))
		}
		if out, err := run(t, helm, args...); err != nil {
			t.Errorf("values %q: %v\n%s", f, err, out)
		}
	}
}

// kinds lists "Kind name" of every object.
func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetName())
	}
	return out
}

func has(t *testing.T, objs []*unstructured.Unstructured, want ...string) {
	t.Helper()
	all := kinds(objs)
	for _, w := range want {
		if !slices.Contains(all, w) {
			t.Errorf("missing %s; rendered: %v", w, all)
		}
	}
}

func hasNot(t *testing.T, objs []*unstructured.Unstructured, prefixes ...string) {
	t.Helper()
	for _, k := range kinds(objs) {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				t.Errorf("unexpected %s", k)
			}
		}
	}
}

func hasArgs(t *testing.T, d *unstructured.Unstructured, want ...string) {
	t.Helper()
	if d == nil {
		t.Fatal("no Deployment")
	}
	args := containerArgs(t, d)
	for _, w := range want {
		if !slices.Contains(args, w) {
			t.Errorf("%s: no arg %s in %v", key(d), w, args)
		}
	}
}

func TestDefaultsGenerateServingCert(t *testing.T) {
	objs := mustTemplate(t, nil)
	has(t, objs, "Secret ebbflow-adapter-serving-cert", "CustomResourceDefinition autoscalers.autoscaling.ebbflow.dev",
		"Deployment ebbflow-adapter", "Deployment ebbflow-autoscaler")
	hasNot(t, objs, "APIService v1.metrics.k8s.io", "APIService v1beta1.metrics.k8s.io", "ServiceMonitor", "Certificate", "Namespace")
	secret := find(objs, "Secret", "ebbflow-adapter-serving-cert")
	ca, _, _ := unstructured.NestedString(secret.Object, "data", "ca.crt")
	for _, name := range []string{"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"} {
		svc := find(objs, "APIService", name)
		if svc == nil {
			t.Fatalf("no APIService %s", name)
		}
		bundle, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle")
		if bundle == "" || bundle != ca {
			t.Errorf("%s: caBundle is not the generated CA", name)
		}
		if skip, _, _ := unstructured.NestedBool(svc.Object, "spec", "insecureSkipTLSVerify"); skip {
			t.Errorf("%s: insecureSkipTLSVerify with a generated CA", name)
		}
	}
	hasArgs(t, find(objs, "Deployment", "ebbflow-adapter"),
		"--tls-cert-file=/var/run/serving-cert/tls.crt", "--tls-private-key-file=/var/run/serving-cert/tls.key")
	crd := find(objs, "CustomResourceDefinition", "autoscalers.autoscaling.ebbflow.dev")
	if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Error("the CRD is not kept on uninstall by default")
	}
}

func TestComponentsStandAlone(t *testing.T) {
	objs := mustTemplate(t, []string{"values-autoscaler-only.yaml"})
	has(t, objs, "Deployment ebbflow-autoscaler", "ServiceAccount ebbflow-autoscaler", "CustomResourceDefinition autoscalers.autoscaling.ebbflow.dev",
		"Role ebbflow-autoscaler-leader-election")
	hasNot(t, objs, "APIService", "Deployment ebbflow-adapter", "ConfigMap", "Secret", "ClusterRole ebbflow-adapter")

	objs = mustTemplate(t, []string{"values-adapter-only.yaml"})
	has(t, objs, "Deployment ebbflow-adapter", "APIService v1beta2.custom.metrics.k8s.io", "ConfigMap ebbflow-adapter-config")
	hasNot(t, objs, "CustomResourceDefinition", "Deployment ebbflow-autoscaler", "ClusterRole ebbflow-autoscaler", "Role ")

	objs = mustTemplate(t, nil, "adapter.enabled=false", "autoscaler.enabled=false")
	if len(objs) != 0 {
		t.Errorf("both components off, yet rendered %v", kinds(objs))
	}
}

func TestCertManager(t *testing.T) {
	objs := mustTemplate(t, []string{"values-cert-manager.yaml"})
	has(t, objs, "Issuer ebbflow-adapter-self-signed", "Certificate ebbflow-adapter-ca", "Issuer ebbflow-adapter-ca", "Certificate ebbflow-adapter-serving-cert")
	hasNot(t, objs, "Secret")
	svc := find(objs, "APIService", "v1beta2.custom.metrics.k8s.io")
	if got := svc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "ebbflow-system/ebbflow-adapter-serving-cert" {
		t.Errorf("inject-ca-from = %q", got)
	}
	objs = mustTemplate(t, []string{"values-cert-manager-issuer.yaml"})
	hasNot(t, objs, "Issuer", "Certificate ebbflow-adapter-ca")
	cert := find(objs, "Certificate", "ebbflow-adapter-serving-cert")
	if kind, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "kind"); kind != "ClusterIssuer" {
		t.Errorf("issuerRef kind %q, want ClusterIssuer", kind)
	}
}

func TestProvidedTLS(t *testing.T) {
	objs := mustTemplate(t, nil, "tls.enable=true", "tls.ca=CA-PEM", "tls.certificate=CERT-PEM", "tls.key=KEY-PEM")
	svc := find(objs, "APIService", "v1beta1.external.metrics.k8s.io")
	if b, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle"); b != "Q0EtUEVN" { // base64("CA-PEM")
		t.Errorf("caBundle %q is not tls.ca", b)
	}
	if _, err := template(t, nil, "tls.enable=true"); err == nil || !strings.Contains(err.Error(), "tls.ca is required") {
		t.Errorf("tls.enable without tls.ca: %v", err)
	}
}

func TestPrometheusAuth(t *testing.T) {
	objs := mustTemplate(t, []string{"values-prometheus-auth.yaml"})
	d := find(objs, "Deployment", "ebbflow-adapter")
	hasArgs(t, d,
		"--prometheus-url=https://prometheus.example.svc:9091/prometheus?dedup=true",
		"--prometheus-verb=POST", "--prometheus-timeout=20s", "--prometheus-header=X-Scope-OrgID=team-a",
		"--prometheus-token-file=/var/run/prometheus/token/token",
		"--prometheus-basic-auth-username=ebbflow",
		"--prometheus-basic-auth-password-file=/var/run/prometheus/basic-auth/password",
		"--prometheus-ca-file=/var/run/prometheus/ca/ca.crt",
		"--prometheus-client-tls-cert-file=/var/run/prometheus/client-cert/tls.crt",
		"--prometheus-client-tls-key-file=/var/run/prometheus/client-cert/tls.key",
		"--prometheus-backends-file=/etc/ebbflow-backends/backends.yaml")
	checkBackendsFile(t, find(objs, "ConfigMap", "ebbflow-adapter-backends"))
	vols := toYAML(t, podSpec(d)["volumes"])
	for _, w := range []string{"name: ebbflow-adapter-backends", "secretName: prometheus-token", "secretName: prometheus-basic-auth", "name: prometheus-ca", "secretName: prometheus-client-cert"} {
		if !strings.Contains(vols, w) {
			t.Errorf("volumes lack %q:\n%s", w, vols)
		}
	}
	if _, err := template(t, nil, "prometheus.auth.basicAuth.username=u"); err == nil || !strings.Contains(err.Error(), "passwordSecretName") {
		t.Errorf("basic auth without a password secret: %v", err)
	}
}

// checkBackendsFile parses the rendered backends file with the adapter's own
// loader, so the chart can only render files the adapter accepts.
func checkBackendsFile(t *testing.T, cm *unstructured.Unstructured) {
	t.Helper()
	if cm == nil {
		t.Fatal("no backends ConfigMap")
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "backends.yaml")
	f, err := rulefile.ParseBackends([]byte(data))
	if err != nil {
		t.Fatalf("rendered backends file refused by the adapter: %v\n%s", err, data)
	}
	if names := f.Names(); len(names) != 1 || names[0] != "team-a" || f.Backends[0].Headers["X-Scope-OrgID"] != "team-a" {
		t.Errorf("rendered backends = %+v", f.Backends)
	}
}

func TestFullValues(t *testing.T) {
	objs := mustTemplate(t, []string{"values-full.yaml"})
	has(t, objs, "ServiceMonitor scaling-adapter", "ServiceMonitor scaling-autoscaler", "Service scaling-autoscaler-metrics",
		"APIService v1.metrics.k8s.io", "APIService v1beta1.metrics.k8s.io", "ClusterRole scaling-adapter-resource-metrics-reader",
		"ClusterRoleBinding scaling-adapter-self-metrics", "PodDisruptionBudget scaling-adapter")
	hasNot(t, objs, "ClusterRole scaling-autoscaler-scale-any", "PodDisruptionBudget scaling-autoscaler")
	if strings.Contains(toYAML(t, find(objs, "ClusterRole", "scaling-autoscaler").Object["rules"]), "configmaps") {
		t.Error("clusterProportional false, yet the autoscaler may read ConfigMaps")
	}
	hasArgs(t, find(objs, "Deployment", "scaling-autoscaler"), "--hpa-mode=all", "--cluster-proportional=false",
		"--leader-elect-resource-name=scaling-autoscaler", "--leader-elect-lease-duration=30s")
	hasArgs(t, find(objs, "Deployment", "scaling-adapter"), "--namespace-query-threshold=50", "--v=4")
	for _, o := range objs {
		if o.GetLabels()["team"] != "platform" || o.GetAnnotations()["owner"] != "platform" {
			t.Errorf("%s lacks customLabels or customAnnotations", key(o))
		}
	}
	pdb := find(objs, "PodDisruptionBudget", "scaling-adapter")
	if _, ok := pdb.Object["spec"].(map[string]any)["minAvailable"]; ok {
		t.Error("PDB sets both minAvailable and maxUnavailable")
	}
	rules := toYAML(t, find(objs, "ClusterRole", "scaling-adapter-resource-reader").Object["rules"])
	if !strings.Contains(rules, "jobs") {
		t.Errorf("extraResourceReaderRules not added: %s", rules)
	}
}

func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"autoscaler.hpaMode=false"}, "hpaMode must be"},
		{[]string{"adapter.resourceMetrics.enabled=true"}, "needs rules.resource"},
		{[]string{"serviceMonitor.prometheusServiceAccount.name=p"}, "namespace is required"},
		{[]string{"autoscaler.autoscalers=false"}, "nothing to reconcile"},
		{[]string{"autoscaler.leaderElection.enabled=false"}, "needs autoscaler.leaderElection.enabled"},
	} {
		_, err := template(t, nil, tc.sets...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.sets, err, tc.want)
		}
	}
}

// TestCRDInSync: the chart's CRD is the generated one (hack/update-codegen.sh
// writes both; this catches a hand edit or a forgotten regeneration).
func TestCRDInSync(t *testing.T) {
	root := buildtools.MustRepoRoot(t)
	gen, _ := filepath.Glob(filepath.Join(root, "manifests", "autoscaler", "crd", "*.yaml"))
	chart, _ := filepath.Glob(filepath.Join(root, "charts", "ebbflow", "files", "crds", "*.yaml"))
	if len(gen) == 0 || len(gen) != len(chart) {
		t.Fatalf("CRD files: %d generated, %d in the chart; run hack/update-codegen.sh", len(gen), len(chart))
	}
	for i := range gen {
		a, errA := os.ReadFile(gen[i])
		b, errB := os.ReadFile(chart[i])
		if errA != nil || errB != nil || string(a) != string(b) || filepath.Base(gen[i]) != filepath.Base(chart[i]) {
			t.Errorf("%s differs from %s; run hack/update-codegen.sh", chart[i], gen[i])
		}
	}
}
