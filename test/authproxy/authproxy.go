// Package authproxy is a TLS reverse proxy on loopback that demands authentication
// (a bearer token, a client certificate, or both) before passing requests to a real
// Prometheus: the "Prometheus behind an authenticating proxy" users run, for testing
// ebbflow-adapter's connection flags end to end.
package authproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
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
	ca, caKey := newCert(t, nil, nil, "authproxy-ca", true)
	srvCert, srvKey := newCert(t, ca, caKey, "127.0.0.1", false)
	cliCert, cliKey := newCert(t, ca, caKey, "ebbflow-adapter", false)
	p.CAFile = writePEM(t, p.Dir, "ca.crt", "CERTIFICATE", ca.Raw)
	p.ClientCertFile = writePEM(t, p.Dir, "client.crt", "CERTIFICATE", cliCert.Raw)
	p.ClientKeyFile = writeKey(t, p.Dir, "client.key", cliKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
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
		Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
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

// newCert issues a certificate for cn (an IP for serving certificates), signed by
// parent (self-signed when parent is nil).
func newCert(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:        isCA, BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(cn); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeKey(t testing.TB, dir, name string, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name, "EC PRIVATE KEY", der)
}
