package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/poll"
)

// upstreamRulesYAML is the real prometheus-adapter's rule file: the fixture's
// gauges times 1000, so an answer says which server computed it. e2e_inflight
// is also one of Ebbflow's own metrics (a conflict Ebbflow wins); pa_inflight
// and pa_queue_messages_ready only prometheus-adapter serves.
const upstreamRulesYAML = `
rules:
- seriesQuery: 'e2e_inflight{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) * 1000'
- seriesQuery: 'e2e_inflight{namespace!="",pod!=""}'
  resources: {template: <<.Resource>>}
  name: {matches: "^e2e_inflight$", as: "pa_inflight"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>) * 1000'
externalRules:
- seriesQuery: 'queue_messages_ready{queue!=""}'
  resources: {namespaced: false}
  name: {matches: "^queue_messages_ready$", as: "pa_queue_messages_ready"}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (queue) * 1000'
`

// upstreamProcess is a real prometheus-adapter serving on loopback.
type upstreamProcess struct {
	cmd     *exec.Cmd
	url     string
	certDir string
	log     string
	done    chan struct{}
}

// startUpstreamPrometheusAdapter builds (once, cached) and starts
// prometheus-adapter v0.12.0 as it is released, on a free loopback port, as
// the identity ebbflow-adapter runs as here (its RBAC is the shipped one),
// with upstreamRulesYAML against the cluster's Prometheus, and waits until it
// is ready. It is killed at the end of the test.
func startUpstreamPrometheusAdapter(t *testing.T) *upstreamProcess {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	bin, err := buildtools.Path(ctx, os.Stderr, "prometheus-adapter")
	if err != nil {
		t.Fatalf("prometheus-adapter: %v", err)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte(upstreamRulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	kc, err := env().KubeconfigFor("ebbflow-adapter")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	p := &upstreamProcess{url: "https://127.0.0.1:" + strconv.Itoa(port), certDir: filepath.Join(dir, "certs"), log: filepath.Join(dir, "prometheus-adapter.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin,
		"--config="+rules, "--prometheus-url="+env().Prometheus().URL(), "--metrics-relist-interval=5s",
		"--secure-port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--cert-dir="+p.certDir,
		"--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc, "--lister-kubeconfig="+kc, "--v=2")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); _ = logFile.Close(); close(p.done) }()
	t.Cleanup(p.kill)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	poll.Until(t, 90*time.Second, "prometheus-adapter /readyz", func() error {
		select {
		case <-p.done:
			t.Fatalf("prometheus-adapter exited:\n%s", fileTail(p.log))
		default:
		}
		resp, err := hc.Get(p.url + "/readyz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	return p
}

// kill sends SIGKILL to the process group and waits for the exit.
func (p *upstreamProcess) kill() {
	if p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// caFile is the serving certificate prometheus-adapter generated (its chain
// holds the CA that signed it).
func (p *upstreamProcess) caFile() string { return filepath.Join(p.certDir, "apiserver.crt") }

// fileTail is the last 4,000 bytes of the file at path.
func fileTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// applyUpstreamsRBAC applies manifests/adapter/components/upstreams/rbac.yaml
// as shipped, its ServiceAccount subject replaced by the user ebbflow-adapter
// runs as here, and removes it at the end of the test.
func applyUpstreamsRBAC(t *testing.T) {
	t.Helper()
	root, err := buildtools.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "adapter", "components", "upstreams", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := splitYAML(data)
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if len(docs) != 2 || yaml.UnmarshalStrict(docs[0], &role) != nil || yaml.UnmarshalStrict(docs[1], &binding) != nil {
		t.Fatalf("rbac.yaml: want a ClusterRole and a ClusterRoleBinding")
	}
	binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "ebbflow-adapter"}}
	rbac := env().Client().RbacV1()
	ctx := t.Context()
	if _, err := rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
}

// splitYAML splits a multi-document YAML file (comments-only documents
// dropped).
func splitYAML(data []byte) [][]byte {
	var out [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err != nil {
			return out
		}
		var m map[string]any
		if yaml.Unmarshal(doc, &m) == nil && len(m) > 0 {
			out = append(out, doc)
		}
	}
}

// grantMetrics lets user get and list the metrics of groups, for the test.
func grantMetrics(t *testing.T, user string, groups ...string) {
	t.Helper()
	rbac := env().Client().RbacV1()
	name := "e2e-upstream-" + user
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{APIGroups: groups, Resources: []string{"*"}, Verbs: []string{"get", "list"}}}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := rbac.ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// clientFor is a clientset authenticating as user (a client certificate of
// the cluster's CA), through kube-apiserver.
func clientFor(t *testing.T, user string) kubernetes.Interface {
	t.Helper()
	kc, err := env().KubeconfigFor(user)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// rawGet is one GET of path through kube-apiserver: its status code, body
// and duration.
func rawGet(ctx context.Context, c kubernetes.Interface, path string) (int, []byte, time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	var code int
	body, _ := c.Discovery().RESTClient().Get().AbsPath(path).Do(ctx).StatusCode(&code).Raw()
	return code, body, time.Since(start)
}

// firstValue is the value of the first item of a custom or external metric
// list; false when the body holds none.
func firstValue(body []byte) (float64, bool) {
	var l struct {
		Items []struct {
			Value resource.Quantity `json:"value"`
		} `json:"items"`
	}
	if json.Unmarshal(body, &l) != nil || len(l.Items) == 0 {
		return 0, false
	}
	return l.Items[0].Value.AsApproximateFloat64(), true
}

// percentile is the p-th percentile (0..1) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}
