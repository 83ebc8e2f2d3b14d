package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// postRenderServiceEnv, when set, makes the test binary Helm's post-renderer:
// the Service it names becomes an ExternalName Service for localhost, so
// kube-apiserver's aggregator reaches an adapter running as a host process on
// the APIServices' port (as the local cluster's own adapter is reached).
const postRenderServiceEnv = "EBBFLOW_E2E_POST_RENDER_SERVICE"

// postRender rewrites the manifest on stdin to stdout (see postRenderServiceEnv).
func postRender(service string) int {
	r := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	var out bytes.Buffer
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "post-render:", err)
			return 1
		}
		var obj map[string]any
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			fmt.Fprintln(os.Stderr, "post-render:", err)
			return 1
		}
		if len(obj) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() == "Service" && u.GetName() == service {
			obj["spec"] = map[string]any{"type": "ExternalName", "externalName": "localhost"}
		}
		y, err := sigsyaml.Marshal(obj)
		if err != nil {
			fmt.Fprintln(os.Stderr, "post-render:", err)
			return 1
		}
		out.WriteString("---\n")
		out.Write(y)
	}
	if _, err := os.Stdout.Write(out.Bytes()); err != nil {
		return 1
	}
	return 0
}

// chartRelease is a release of charts/ebbflow installed in a cluster of its own.
type chartRelease struct {
	c        *cluster.Cluster
	helm     string
	name, ns string
	prefix   string // object name prefix, <release>-ebbflow
	// render are the flags of install and upgrade: the post-renderer and values.
	render []string
}

// helmRun runs helm with args and the release's namespace and kubeconfig.
func (r *chartRelease) helmRun(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, r.helm, append(args, "--namespace", r.ns, "--kubeconfig", r.c.AdminKubeconfig())...)
	cmd.Dir = buildtools.MustRepoRoot(t)
	cmd.Env = append(helmEnv(t), postRenderServiceEnv+"="+r.prefix+"-adapter")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.Bytes(), out)
	}
	return string(out)
}

// manifest returns the release's objects as Helm applied them.
func (r *chartRelease) manifest(ctx context.Context, t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out := []byte(r.helmRun(ctx, t, "get", "manifest", r.name))
	var objs []*unstructured.Unstructured
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestChartAPIServicesAvailable installs the chart with its default values (the
// default rules: no external rules, no resource metrics) into a cluster of its
// own, runs ebbflow-adapter as a host process with the arguments, rule file,
// serving certificate and service account the chart gives its pods, and requires
// every APIService the chart registers to become Available. Then a helm upgrade
// adds the first external rule, which must answer without restarting the
// adapter, and helm uninstall must leave no leader-election Lease (the
// autoscaler's service account may get and update it, but create none).
func TestChartAPIServicesAvailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := cluster.StartT(t, cluster.Options{
		NoAdapter: true, Nodes: 1,
		PrometheusTargets: []promtest.Target{{Addr: exp().Addr(), Job: "e2e", HonorLabels: true}},
	})
	port := freePort(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &chartRelease{c: c, helm: helmPath(t), name: "e2e-apis", ns: "e2e-apis", prefix: "e2e-apis-ebbflow"}
	r.render = []string{"--post-renderer", self, "--set", "adapter.service.port=" + strconv.Itoa(port)}
	out := r.helmRun(ctx, t, append([]string{"install", r.name, "charts/ebbflow", "--create-namespace"}, r.render...)...)
	if !strings.Contains(out, "get lease "+r.prefix+"-autoscaler") {
		t.Errorf("NOTES do not name the Lease:\n%s", out)
	}

	objs := r.manifest(ctx, t)
	var apiServices []string
	for _, o := range objs {
		if o.GetKind() == "APIService" {
			apiServices = append(apiServices, o.GetName())
		}
	}
	slices.Sort(apiServices)
	if want := []string{"v1beta1.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io"}; !slices.Equal(apiServices, want) {
		t.Fatalf("the chart registers %v, want %v", apiServices, want)
	}

	a := startChartAdapter(ctx, t, r, objs, port)
	if err := c.WaitAPIServicesAvailable(ctx, 90*time.Second, apiServices...); err != nil {
		t.Fatal(err)
	}
	raw := c.Client().Discovery().RESTClient()
	for _, gv := range []string{"custom.metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2", "external.metrics.k8s.io/v1beta1"} {
		if _, err := raw.Get().AbsPath("/apis/" + gv).DoRaw(ctx); err != nil {
			t.Errorf("GET /apis/%s through kube-apiserver: %v", gv, err)
		}
	}
	queuePath := "/apis/external.metrics.k8s.io/v1beta1/namespaces/default/" + QueueGauge
	if _, err := raw.Get().AbsPath(queuePath).DoRaw(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("external metric without external rules: %v, want NotFound", err)
	}

	// The leader-election Lease is the chart's; the autoscaler's identity may
	// read and renew it (as the leader does) but create no Lease.
	leaseName := r.prefix + "-autoscaler"
	sa := serviceAccountClient(ctx, t, c, r.ns, r.prefix+"-autoscaler")
	leases := sa.CoordinationV1().Leases(r.ns)
	lease, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the autoscaler reading its Lease: %v", err)
	}
	lease.Spec.HolderIdentity = ptr.To("e2e-leader")
	lease.Spec.LeaseDurationSeconds = ptr.To[int32](15)
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the autoscaler renewing its Lease: %v", err)
	}
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "e2e-other", Namespace: r.ns}}
	if _, err := leases.Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the autoscaler creating a Lease: %v, want Forbidden", err)
	}

	// The first external rule, by helm upgrade: the ConfigMap changes, the file
	// reaches the pod's volume (here: copied, as the kubelet would) and the
	// running adapter serves the rule.
	values := filepath.Join(t.TempDir(), "external.yaml")
	if err := os.WriteFile(values, []byte(`rules:
  external:
  - seriesQuery: 'queue_messages_ready{queue!=""}'
    resources: {namespaced: false}
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue)'
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r.helmRun(ctx, t, append([]string{"upgrade", r.name, "charts/ebbflow", "--values", values}, r.render...)...)
	a.syncConfig(ctx, t)
	var got string
	_, err = pollUntil(60*time.Second, func(ctx context.Context) bool {
		body, err := raw.Get().AbsPath(queuePath).Param("labelSelector", "queue=e2e-orders").DoRaw(ctx)
		got = fmt.Sprintf("%s (%v)", body, err)
		var list struct {
			Items []struct{ Value string } `json:"items"`
		}
		return err == nil && json.Unmarshal(body, &list) == nil && len(list.Items) == 1 && list.Items[0].Value == "42"
	})
	if err != nil {
		t.Errorf("external metric after the upgrade: %s", got)
	}
	if a.exited() {
		t.Error("the adapter exited")
	}
	if l, err := leases.Get(ctx, leaseName, metav1.GetOptions{}); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") != "e2e-leader" {
		t.Errorf("helm upgrade changed the leader's Lease: %v %v", l, err)
	}

	r.helmRun(ctx, t, "uninstall", r.name, "--wait")
	if _, err := c.Client().CoordinationV1().Leases(r.ns).Get(ctx, leaseName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Lease %s left after helm uninstall (err %v)", leaseName, err)
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range apiServices {
		if _, err := dyn.Resource(apiServiceResource).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("APIService %s left after helm uninstall (err %v)", name, err)
		}
	}
}

var apiServiceResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// chartAdapter is ebbflow-adapter run as the chart's pod would run.
type chartAdapter struct {
	r          *chartRelease
	configPath string
	done       chan struct{}
}

func (a *chartAdapter) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// syncConfig writes the release's rule ConfigMap to the adapter's rule file by
// rename, as the kubelet updates a ConfigMap volume.
func (a *chartAdapter) syncConfig(ctx context.Context, t *testing.T) {
	t.Helper()
	cm, err := a.r.c.Client().CoreV1().ConfigMaps(a.r.ns).Get(ctx, a.r.prefix+"-adapter-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tmp := a.configPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a.configPath); err != nil {
		t.Fatal(err)
	}
}

// startChartAdapter starts the adapter with the rendered Deployment's arguments,
// paths mapped to files holding what the pod would mount (rule ConfigMap, serving
// certificate Secret), the cluster's Prometheus, and the chart's service account
// for the Kubernetes API.
func startChartAdapter(ctx context.Context, t *testing.T, r *chartRelease, objs []*unstructured.Unstructured, port int) *chartAdapter {
	t.Helper()
	dir := t.TempDir()
	a := &chartAdapter{r: r, configPath: filepath.Join(dir, "config.yaml"), done: make(chan struct{})}
	a.syncConfig(ctx, t)
	secret, err := r.c.Client().CoreV1().Secrets(r.ns).Get(ctx, r.prefix+"-adapter-serving-cert", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, k), secret.Data[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var deploy *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == r.prefix+"-adapter" {
			deploy = o
		}
	}
	if deploy == nil {
		t.Fatal("no adapter Deployment in the release")
	}
	cs, _, _ := unstructured.NestedSlice(deploy.Object, "spec", "template", "spec", "containers")
	rendered, _, _ := unstructured.NestedStringSlice(cs[0].(map[string]any), "args")
	kubeconfig := writeServiceAccountKubeconfig(ctx, t, r.c, r.ns, r.prefix+"-adapter", dir)
	var args []string
	for _, arg := range rendered {
		name, _, _ := strings.Cut(arg, "=")
		switch name {
		case "--config":
			arg = name + "=" + a.configPath
		case "--prometheus-url":
			arg = name + "=" + r.c.Prometheus().URL()
		case "--secure-port":
			arg = name + "=" + strconv.Itoa(port)
		case "--tls-cert-file":
			arg = name + "=" + filepath.Join(dir, "tls.crt")
		case "--tls-private-key-file":
			arg = name + "=" + filepath.Join(dir, "tls.key")
		}
		args = append(args, arg)
	}
	args = append(args, "--bind-address=127.0.0.1", "--config-check-interval=1s",
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig, "--lister-kubeconfig="+kubeconfig)
	if !slices.Contains(args, "--resource-metrics=disabled") {
		t.Errorf("the chart's default adapter arguments lack --resource-metrics=disabled: %v", rendered)
	}
	log, err := os.Create(filepath.Join(dir, "adapter.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.c.AdapterBinary(), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(a.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-a.done
		_ = log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("adapter log:\n%s", tail(string(b), 40))
			}
		}
	})
	return a
}

// writeServiceAccountKubeconfig writes a kubeconfig authenticating as a service
// account (a TokenRequest token), so the process has exactly the chart's RBAC.
func writeServiceAccountKubeconfig(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name, dir string) string {
	t.Helper()
	tr, err := c.Client().CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	rc := c.RESTConfig()
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountClient returns a clientset acting as a service account.
func serviceAccountClient(ctx context.Context, t *testing.T, c *cluster.Cluster, ns, name string) kubernetes.Interface {
	t.Helper()
	path := writeServiceAccountKubeconfig(ctx, t, c, ns, name, t.TempDir())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg))
}

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
