package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/ebbflow/ebbflow/test/certs"
	"github.com/ebbflow/ebbflow/test/proc"
)

// pollInterval is the pause between readiness probes.
const pollInterval = 100 * time.Millisecond

// waitFor calls cond until it reports true, ctx is done, timeout passes or p
// (if not nil) exits. The error names what was awaited and the last
// condition error.
func waitFor(ctx context.Context, what string, timeout time.Duration, p *process, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	var child *proc.Process
	if p != nil {
		child = p.Process
	}
	err := proc.WaitFor(ctx, child, pollInterval, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			last = err
		}
		return ok, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, proc.ErrExited):
		return fmt.Errorf("waiting for %s: %w", what, p.exitError())
	case p != nil:
		return fmt.Errorf("waiting for %s (last error: %v): %w; %s log tail:\n%s", what, last, err, p.name, logTail(p.logPath, 20))
	}
	return fmt.Errorf("waiting for %s (last error: %v): %w", what, last, err)
}

// httpsClient returns a client trusting caPEM (or skipping verification if
// caPEM is nil, for self-signed loopback serving certs) and presenting
// the client pair if given. It never uses a proxy.
func httpsClient(caPEM []byte, client *certs.KeyPair) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM == nil {
		cfg.InsecureSkipVerify = true // loopback self-signed serving cert of a child process
	} else {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("no certificate in CA bundle")
		}
		cfg.RootCAs = pool
	}
	if client != nil {
		pair, err := tls.X509KeyPair(client.CertPEM, client.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: cfg, DisableKeepAlives: true},
	}, nil
}

// probe reports whether GET url answers 200; a non-200 answer becomes the
// error, with the start of its body.
func probe(ctx context.Context, c *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return true, nil
}
