package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/server"
	"github.com/ebbflow/ebbflow/test/authproxy"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// TestPrometheusConnectionFlags runs every combination of connection flags that
// prometheus-adapter accepts against a real Prometheus behind a TLS proxy that demands
// a token and/or a client certificate, through ebbflow-adapter's own flag parsing:
// each combination reaches Prometheus with the same meaning as there (the CA file
// wins over in-cluster and kubeconfig auth; the token file is added to whichever
// client is used and overrides the kubeconfig's own token).
func TestPrometheusConnectionFlags(t *testing.T) {
	srv := promtest.Start(t, promtest.Options{})
	const token = "s3cret-token"
	byToken := authproxy.Start(t, srv.URL(), authproxy.Options{Token: token})
	byCert := authproxy.Start(t, srv.URL(), authproxy.Options{ClientCert: true})
	byBoth := authproxy.Start(t, srv.URL(), authproxy.Options{Token: token, ClientCert: true})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := func(p *authproxy.Proxy) string { return "--prometheus-ca-file=" + p.CAFile }
	certs := func(p *authproxy.Proxy) []string {
		return []string{"--prometheus-client-tls-cert-file=" + p.ClientCertFile, "--prometheus-client-tls-key-file=" + p.ClientKeyFile}
	}
	tests := []struct {
		name  string
		proxy *authproxy.Proxy
		flags []string
	}{
		{"ca-file and token-file", byToken, []string{ca(byToken), "--prometheus-token-file=" + tokenFile}},
		{"ca-file and client certificate", byCert, append([]string{ca(byCert)}, certs(byCert)...)},
		{"ca-file, client certificate and token-file", byBoth, append([]string{ca(byBoth), "--prometheus-token-file=" + tokenFile}, certs(byBoth)...)},
		// prometheus-adapter: with a CA file, in-cluster auth is ignored.
		{"auth-incluster with ca-file and token-file", byToken, []string{"--prometheus-auth-incluster", ca(byToken), "--prometheus-token-file=" + tokenFile}},
		{"auth-incluster with ca-file and client certificate", byCert, append([]string{"--prometheus-auth-incluster", ca(byCert)}, certs(byCert)...)},
		{"auth-config", byToken, []string{"--prometheus-auth-config=" + byToken.Kubeconfig(t, "token.kubeconfig", token, false)}},
		{"auth-config with client certificate", byCert, []string{"--prometheus-auth-config=" + byCert.Kubeconfig(t, "cert.kubeconfig", "", true)}},
		// The token file overrides the kubeconfig's (wrong) token.
		{"auth-config and token-file", byToken, []string{"--prometheus-auth-config=" + byToken.Kubeconfig(t, "wrong.kubeconfig", "wrong", false), "--prometheus-token-file=" + tokenFile}},
		{"auth-config with client certificate and token-file", byBoth, []string{"--prometheus-auth-config=" + byBoth.Kubeconfig(t, "both.kubeconfig", "", true), "--prometheus-token-file=" + tokenFile}},
		// With a CA file the kubeconfig is ignored, as in prometheus-adapter.
		{"auth-config with ca-file and token-file", byToken, []string{"--prometheus-auth-config=" + byToken.Kubeconfig(t, "ignored.kubeconfig", "wrong", false), ca(byToken), "--prometheus-token-file=" + tokenFile}},
		{"headers with auth-config and token-file", byToken, []string{"--prometheus-auth-config=" + byToken.Kubeconfig(t, "h.kubeconfig", "", false), "--prometheus-token-file=" + tokenFile, "--prometheus-header=X-Scope-OrgID=team"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := clientFromFlags(t, tt.proxy.URL, tt.flags)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			v, err := c.Query(ctx, "vector(42)")
			if err != nil || len(v) != 1 || v[0].Value != 42 {
				t.Fatalf("query through the proxy: %v, %v (proxy rejected %d requests)", v, err, tt.proxy.Rejected())
			}
		})
	}
	t.Run("without credentials the proxy refuses", func(t *testing.T) {
		c := clientFromFlags(t, byBoth.URL, []string{ca(byBoth)})
		if _, err := c.Query(context.Background(), "vector(1)"); err == nil {
			t.Fatal("query without token or certificate succeeded: the proxy does not check")
		}
	})
	t.Run("auth-incluster with auth-config is refused at start", func(t *testing.T) {
		o := server.NewOptions()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse([]string{"--prometheus-auth-incluster", "--prometheus-auth-config=x"}); err != nil {
			t.Fatal(err)
		}
		if errs := o.Transport.Validate(); len(errs) == 0 || !strings.Contains(errs[0].Error(), "mutually exclusive") {
			t.Errorf("errors %v, want mutually exclusive", errs)
		}
	})
}

// clientFromFlags parses flags as ebbflow-adapter does and builds its Prometheus
// client for url.
func clientFromFlags(t *testing.T, url string, flags []string) *prom.HTTPClient {
	t.Helper()
	o := server.NewOptions()
	fs := pflag.NewFlagSet("ebbflow-adapter", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(append([]string{"--prometheus-url=" + url}, flags...)); err != nil {
		t.Fatal(err)
	}
	if errs := o.Transport.Validate(); len(errs) > 0 {
		t.Fatalf("flags %v refused: %v", flags, errs)
	}
	headers, err := prom.ParseHeaders(o.PrometheusHeaders)
	if err != nil {
		t.Fatal(err)
	}
	o.Transport.Headers = headers
	hc, err := prom.NewHTTPTransportClient(o.Transport)
	if err != nil {
		t.Fatal(err)
	}
	c, err := prom.NewHTTPClient(o.PrometheusURL, hc, prom.VerbGET)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
