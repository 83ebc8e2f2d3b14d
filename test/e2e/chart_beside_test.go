package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// otherExternalMetric is the one external metric the other server lists.
const otherExternalMetric = "s0-other-queue"

// TestChartBesideAnotherExternalServer: another server owns
// v1beta1.external.metrics.k8s.io (an APIService of no Helm release pointing
// to a server of the test's own, as KEDA's does), so the chart with its
// defaults cannot be installed (Helm refuses to take the APIService over);
// with adapter.apiServices.external false it installs, serves custom metrics
// through kube-apiserver, leaves the other APIService and its answers
// untouched, and its uninstall leaves them too.
func TestChartBesideAnotherExternalServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := cluster.StartT(t, cluster.Options{
		NoAdapter: true, Nodes: 1,
		PrometheusTargets: []promtest.Target{{Addr: exp().Addr(), Job: "e2e", HonorLabels: true}},
	})
	const metricNS, gauge = "e2e-beside", "e2e_beside_gauge"
	exp().SetGauge(gauge, map[string]string{"namespace": metricNS}, 7)
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metricNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	registerOtherExternalServer(ctx, t, c, dyn)
	const other = "v1beta1.external.metrics.k8s.io"
	if err := c.WaitAPIServicesAvailable(ctx, 60*time.Second, other); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &chartRelease{c: c, helm: helmPath(t), name: "e2e-beside", ns: "e2e-beside-system", prefix: "e2e-beside-ebbflow"}
	// metricsRelistInterval at prometheus-adapter's name (top level).
	r.render = []string{"--post-renderer", self, "--set", "adapter.service.port=" + strconv.Itoa(port), "--set", "metricsRelistInterval=5s"}

	// With the defaults the chart registers external metrics too: refused.
	out, err := helmTry(ctx, t, r, append([]string{"install", "e2e-beside-defaults", "charts/ebbflow", "--create-namespace"}, r.render...)...)
	if err == nil || !strings.Contains(out, other) || !strings.Contains(out, "exists") {
		t.Errorf("helm install with external metrics on, beside another server's APIService: %v\n%s", err, out)
	}
	_, _ = helmTry(ctx, t, r, "uninstall", "e2e-beside-defaults", "--ignore-not-found", "--wait")

	r.render = append(r.render, "--set", "adapter.apiServices.external=false")
	r.helmRun(ctx, t, append([]string{"install", r.name, "charts/ebbflow", "--create-namespace"}, r.render...)...)
	objs := r.manifest(ctx, t)
	var apiServices []string
	for _, o := range objs {
		if o.GetKind() == "APIService" {
			apiServices = append(apiServices, o.GetName())
		}
	}
	if want := "v1beta1.custom.metrics.k8s.io,v1beta2.custom.metrics.k8s.io"; strings.Join(apiServices, ",") != want {
		t.Fatalf("the release registers %v, want %s", apiServices, want)
	}
	a := startChartAdapter(ctx, t, r, objs, port)
	if err := c.WaitAPIServicesAvailable(ctx, 90*time.Second, apiServices...); err != nil {
		t.Fatal(err)
	}

	raw := c.Client().Discovery().RESTClient()
	path := "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + metricNS + "/metrics/" + gauge
	var got string
	if _, err := pollUntil(60*time.Second, func(ctx context.Context) bool {
		body, err := raw.Get().AbsPath(path).DoRaw(ctx)
		got = fmt.Sprintf("%s (%v)", body, err)
		var list struct {
			Items []struct{ Value string } `json:"items"`
		}
		return err == nil && json.Unmarshal(body, &list) == nil && len(list.Items) == 1 && list.Items[0].Value == "7"
	}); err != nil {
		t.Errorf("GET %s through kube-apiserver: %s", path, got)
	}
	checkOtherExternalServer(ctx, t, c, dyn)
	if a.exited() {
		t.Error("the adapter exited")
	}

	r.helmRun(ctx, t, "uninstall", r.name, "--wait")
	checkOtherExternalServer(ctx, t, c, dyn)
}

// registerOtherExternalServer starts a server of external.metrics.k8s.io
// v1beta1 on loopback (discovery only: one metric) and registers it as
// kube-apiserver's APIService for that group version, behind an ExternalName
// Service for localhost, as no Helm release.
func registerOtherExternalServer(ctx context.Context, t *testing.T, c *cluster.Cluster, dyn dynamic.Interface) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/apis/external.metrics.k8s.io/v1beta1" {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "external.metrics.k8s.io/v1beta1",
			APIResources: []metav1.APIResource{{Name: otherExternalMetric, Namespaced: true, Kind: "ExternalMetricValueList", Verbs: []string{"get"}}},
		})
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.StartTLS()
	t.Cleanup(srv.Close)
	port := l.Addr().(*net.TCPAddr).Port

	const ns, name = "e2e-other-metrics", "other-metrics"
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(port), TargetPort: intstr.FromInt32(int32(port))}}},
	}
	if _, err := c.Client().CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.external.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "external.metrics.k8s.io", "version": "v1beta1",
			"service":               map[string]any{"namespace": ns, "name": name, "port": int64(port)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	if _, err := dyn.Resource(apiServiceResource).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkOtherExternalServer requires the other server's APIService unchanged
// and its metric listed through kube-apiserver.
func checkOtherExternalServer(ctx context.Context, t *testing.T, c *cluster.Cluster, dyn dynamic.Interface) {
	t.Helper()
	o, err := dyn.Resource(apiServiceResource).Get(ctx, "v1beta1.external.metrics.k8s.io", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the other server's APIService: %v", err)
	}
	if name, _, _ := unstructured.NestedString(o.Object, "spec", "service", "name"); name != "other-metrics" || len(o.GetLabels()) != 0 {
		t.Errorf("the other server's APIService was changed: service %q, labels %v", name, o.GetLabels())
	}
	body, err := c.Client().Discovery().RESTClient().Get().AbsPath("/apis/external.metrics.k8s.io/v1beta1").DoRaw(ctx)
	if err != nil || !bytes.Contains(body, []byte(otherExternalMetric)) {
		t.Errorf("external.metrics.k8s.io/v1beta1 through kube-apiserver is not the other server's: %s (%v)", body, err)
	}
}

// helmTry runs helm like chartRelease.helmRun, returning its combined output
// and error instead of failing the test.
func helmTry(ctx context.Context, t *testing.T, r *chartRelease, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, r.helm, append(args, "--namespace", r.ns, "--kubeconfig", r.c.AdminKubeconfig())...)
	cmd.Dir = buildtools.MustRepoRoot(t)
	cmd.Env = append(helmEnv(t), postRenderServiceEnv+"="+r.prefix+"-adapter")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
