// Package authproxy is a TLS reverse proxy on loopback that demands authentication
// (a bearer token, a client certificate, or both) before passing requests to a real
// Prometheus: the "Prometheus behind an authenticating proxy" users run, for testing
// ebbflow-adapter's connection flags end to end.
package authproxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/ebbflow/ebbflow/test/certs"
)

// Options say what the proxy demands.
type Options struct {
	// Token, when set, must arrive as "Authorization: Bearer <Token>".
	Token string
	// ClientCert demands a client certificate signed by the proxy's CA.
	ClientCert bool
}

// Proxy is a running proxy and the files a client needs to reach it.
type Proxy struct {
	// URL is https://127.0.0.1:port.
	URL string
	// CAFile verifies the proxy's serving certificate and signs client certificates.
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate the proxy accepts.
	ClientCertFile, ClientKeyFile string
	// Dir holds the files; write kubeconfigs there.
	Dir      string
	rejected atomic.Int64
}

// Rejected counts requests refused for missing or wrong credentials.
func (p *Proxy) Rejected() int64 { return p.rejected.Load() }

// Start runs a proxy to target until the test ends.
func Start(t testing.TB, target string, opts Options) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Dir: t.TempDir()}
	ca, err := certs.NewAuthority("authproxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue(certs.Spec{CommonName: "127.0.0.1", Server: true, IPs: []net.IP{net.ParseIP("127.0.0.1")}})
	if err != nil {
		t.Fatal(err)
	}
	srvCert, err := serving.TLS()
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(certs.Spec{CommonName: "ebbflow-adapter"})
	if err != nil {
		t.Fatal(err)
	}
	p.CAFile = filepath.Join(p.Dir, "ca.crt")
	if err := os.WriteFile(p.CAFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if p.ClientCertFile, p.ClientKeyFile, err = client.Write(p.Dir, "client"); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.Token != "" && r.Header.Get("Authorization") != "Bearer "+opts.Token ||
			opts.ClientCert && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			p.rejected.Add(1)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		rp.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{srvCert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Kubeconfig writes a kubeconfig whose cluster is the proxy (verified with its CA)
// and whose user has token and, when clientCert, the proxy's client certificate.
func (p *Proxy) Kubeconfig(t testing.TB, name, token string, clientCert bool) string {
	t.Helper()
	user := ""
	if token != "" {
		user += fmt.Sprintf("    token: %q\n", token)
	}
	if clientCert {
		user += fmt.Sprintf("    client-certificate: %s\n    client-key: %s\n", p.ClientCertFile, p.ClientKeyFile)
	}
	if user == "" {
		user = "    {}\n"
	}
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: prom
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
%scontexts:
- name: c
  context: {cluster: prom, user: u}
current-context: c
`, p.URL, p.CAFile, user)
	path := filepath.Join(p.Dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
