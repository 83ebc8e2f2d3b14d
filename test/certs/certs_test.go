package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// TestIssue: a client trusting the authority reaches a server with an
// issued serving certificate for 127.0.0.1 and presents an issued client
// certificate, whose subject the server sees.
func TestIssue(t *testing.T) {
	ca, err := NewAuthority("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Issue(Spec{CommonName: "server", Server: true, IPs: LoopbackIPs()})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(Spec{CommonName: "alice", Orgs: []string{"team-a"}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatal("no certificate in the authority's PEM")
	}
	srvCert, err := serving.TLS()
	if err != nil {
		t.Fatal(err)
	}
	var subject string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.VerifiedChains) > 0 {
			c := r.TLS.VerifiedChains[0][0]
			subject = c.Subject.CommonName + "/" + c.Subject.Organization[0]
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	defer srv.Close()
	cliCert, err := client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cliCert}}}}
	resp, err := hc.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if subject != "alice/team-a" {
		t.Errorf("server saw client %q, want alice/team-a", subject)
	}

	// A client certificate is no serving certificate.
	block, _ := pem.Decode(client.CertPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate verified for server auth")
	}

	dir := t.TempDir()
	certPath, keyPath, err := client.Write(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		t.Errorf("written pair: %v", err)
	}
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %s: %v, mode %v; want 0600", keyPath, err, fi.Mode().Perm())
	}
}
