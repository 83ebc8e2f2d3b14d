package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ebbflow/ebbflow/test/poll"
)

// get sends GET path?query through kube-apiserver with client and returns
// the status code and body.
func get(t *testing.T, client kubernetes.Interface, path string, query url.Values) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := client.Discovery().RESTClient().Get().AbsPath(path)
	for k, vs := range query {
		for _, v := range vs {
			req = req.Param(k, v)
		}
	}
	var code int
	res := req.Do(ctx).StatusCode(&code)
	body, _ := res.Raw()
	if code == 0 {
		t.Fatalf("GET %s: %v", path, res.Error())
	}
	return code, string(body)
}

// userClient returns a client authenticating with a fresh client certificate
// for user.
func userClient(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	path, err := env().KubeconfigFor(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func inflightPath() string {
	return fmt.Sprintf("/apis/custom.metrics.k8s.io/v1beta2/namespaces/%s/pods/*/%s", fixtureNamespace, InflightGauge)
}

// TestRBACForbidsUnboundUser checks that kube-apiserver authorizes metrics
// reads: a user without a role gets 403, the same user bound to a role that
// allows custom.metrics.k8s.io gets the values.
func TestRBACForbidsUnboundUser(t *testing.T) {
	waitDiscovered(t)
	eve := userClient(t, "e2e-eve")
	if code, body := get(t, eve, inflightPath(), nil); code != http.StatusForbidden {
		t.Errorf("unbound user: %d %s, want 403", code, body)
	}
	extPath := fmt.Sprintf("/apis/external.metrics.k8s.io/v1beta1/namespaces/%s/%s", fixtureNamespace, QueueGauge)
	if code, body := get(t, eve, extPath, nil); code != http.StatusForbidden {
		t.Errorf("unbound user, external: %d %s, want 403", code, body)
	}

	// Control: the same request succeeds once RBAC allows it, so the 403 above
	// came from authorization and not from a broken request.
	ctx := context.Background()
	rbac := env().Client().RbacV1()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader", Namespace: fixtureNamespace},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"custom.metrics.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := rbac.Roles(fixtureNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader", Namespace: fixtureNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "e2e-bob"}},
	}
	if _, err := rbac.RoleBindings(fixtureNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rbac.RoleBindings(fixtureNamespace).Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = rbac.Roles(fixtureNamespace).Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	bob := userClient(t, "e2e-bob")
	poll.Until(t, 30*time.Second, "bound user reads metrics", func() error {
		if code, body := get(t, bob, inflightPath(), nil); code != http.StatusOK {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	// The role covers one namespace only.
	other := fmt.Sprintf("/apis/custom.metrics.k8s.io/v1beta2/namespaces/default/pods/*/%s", InflightGauge)
	if code, body := get(t, bob, other, nil); code != http.StatusForbidden {
		t.Errorf("bound user, other namespace: %d %s, want 403", code, body)
	}
}

// adapterClient returns an HTTPS client for the adapter that trusts its CA
// and presents the given certificate, if any.
func adapterClient(t *testing.T, cert *tls.Certificate) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(env().AdapterCA()) {
		t.Fatal("adapter CA holds no certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg}}
}

func directGet(t *testing.T, c *http.Client, path string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, env().AdapterURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(body)
}

// TestAdapterRejectsUnauthenticated sends requests straight to the adapter,
// bypassing kube-apiserver.
func TestAdapterRejectsUnauthenticated(t *testing.T) {
	waitDiscovered(t)
	anon := adapterClient(t, nil)
	rejected := func(code int) bool { return code == http.StatusUnauthorized || code == http.StatusForbidden }
	if code, body := directGet(t, anon, inflightPath(), nil); !rejected(code) {
		t.Errorf("no credentials: %d %s, want 401 or 403", code, body)
	}
	// Impersonating the front proxy with headers alone must not work: only a
	// client certificate from the front-proxy CA makes them trusted.
	forged := http.Header{"X-Remote-User": {"system:admin"}, "X-Remote-Group": {"system:masters"}}
	if code, body := directGet(t, anon, inflightPath(), forged); !rejected(code) {
		t.Errorf("forged front-proxy headers: %d %s, want 401 or 403", code, body)
	}
	if code, body := directGet(t, anon, inflightPath(), http.Header{"Authorization": {"Bearer not-a-token"}}); !rejected(code) {
		t.Errorf("invalid bearer token: %d %s, want 401 or 403", code, body)
	}

	// Control: a client certificate of a cluster admin is accepted, so the
	// rejections above are about credentials.
	admin := env().RESTConfig()
	pair, err := tls.X509KeyPair(admin.CertData, admin.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := directGet(t, adapterClient(t, &pair), inflightPath(), nil); code != http.StatusOK {
		t.Errorf("admin client certificate: %d %s, want 200", code, body)
	}
}

// TestSelectorInjectionRejected sends label selectors crafted to break out of
// the PromQL label matchers. Each must be refused with 400, never evaluated.
func TestSelectorInjectionRejected(t *testing.T) {
	waitDiscovered(t)
	admin := env().Client()
	base := inflightPath()
	ext := fmt.Sprintf("/apis/external.metrics.k8s.io/v1beta1/namespaces/%s/%s", fixtureNamespace, QueueGauge)
	cases := []struct{ name, path, param, selector string }{
		{"metricLabelSelector set", base, "metricLabelSelector", `a in (x"} or vector(1) or x{b=")`},
		{"metricLabelSelector equality", base, "metricLabelSelector", `a=x"} or vector(1) or x{b="`},
		{"pod labelSelector", base, "labelSelector", `app in (web"} or vector(1) or x{b=")`},
		{"external labelSelector", ext, "labelSelector", `queue in (x"}) or vector(1) or (x{b=")`},
		{"external regexp", ext, "labelSelector", `queue=~.+`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := url.Values{tc.param: {tc.selector}}
			if code, body := get(t, admin, tc.path, q); code != http.StatusBadRequest {
				t.Errorf("GET %s?%s: %d %s, want 400", tc.path, q.Encode(), code, body)
			}
		})
	}

	// A valid selector naming a value with no series is a correct empty
	// answer, not an error and not every queue.
	q := url.Values{"labelSelector": {"queue=e2e-no-such-queue"}}
	code, body := get(t, admin, ext, q)
	if code != http.StatusOK {
		t.Fatalf("GET %s?%s: %d %s, want 200", ext, q.Encode(), code, body)
	}
	if want := `"items":[]`; !strings.Contains(body, want) {
		t.Errorf("GET %s?%s: %s, want an empty list", ext, q.Encode(), body)
	}
}
