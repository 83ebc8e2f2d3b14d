package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/ebbflow/ebbflow/adapter/config"
	"github.com/ebbflow/ebbflow/adapter/prom"
)

// backend is one named backend's client and request timeout, before guarding.
type backend struct {
	client        prom.Client
	timeout       time.Duration
	maxConcurrent int
}

// loadBackends reads --prometheus-backends-file (none: no named backends) and
// builds a client per backend. Connection settings of the default backend are not
// inherited: each backend says how it is reached.
func (o *Options) loadBackends() (map[string]backend, []string, error) {
	if o.BackendsFile == "" {
		return nil, nil, nil
	}
	f, err := config.LoadBackendsFile(o.BackendsFile)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]backend, len(f.Backends))
	for _, b := range f.Backends {
		c, err := newBackendClient(b, o.MaxResponseBytes, o.Transport.DisableHTTP2)
		if err != nil {
			return nil, nil, fmt.Errorf("backends file %s: backend %q: %w", o.BackendsFile, b.Name, err)
		}
		timeout := time.Duration(b.Timeout)
		if timeout == 0 {
			timeout = o.PrometheusTimeout
		}
		maxConcurrent := b.MaxConcurrentQueries
		if maxConcurrent == 0 {
			maxConcurrent = o.MaxConcurrentQueries
		}
		out[b.Name] = backend{client: c, timeout: timeout, maxConcurrent: maxConcurrent}
	}
	return out, f.Names(), nil
}

// newBackendClient builds the HTTP client of one validated backend.
func newBackendClient(b config.Backend, maxResponse int64, disableHTTP2 bool) (prom.Client, error) {
	t := prom.TransportOptions{
		CAFile: b.CAFile, ClientCertFile: b.ClientCertFile, ClientKeyFile: b.ClientKeyFile,
		TokenFile: b.TokenFile, DisableHTTP2: disableHTTP2,
	}
	if b.BasicAuth != nil {
		t.BasicAuthUsername, t.BasicAuthPasswordFile = b.BasicAuth.Username, b.BasicAuth.PasswordFile
	}
	if len(b.Headers) > 0 {
		t.Headers = map[string][]string{}
		for name, value := range b.Headers {
			t.Headers[http.CanonicalHeaderKey(name)] = []string{value}
		}
	}
	hc, err := prom.NewHTTPTransportClient(t)
	if err != nil {
		return nil, err
	}
	verb := prom.Verb(b.Verb)
	if verb == "" {
		verb = prom.VerbGET
	}
	return prom.NewHTTPClient(b.URL, hc, verb, prom.WithMaxResponseBytes(maxResponse))
}

// guardBackends wraps every client in its own Guard: each backend has its own
// concurrency slots (maxConcurrentQueries or --max-concurrent-queries) and
// singleflight, and self-metrics labelled by its name.
func guardBackends(m *prom.GuardMetrics, backends map[string]backend) prom.Backends {
	out := make(prom.Backends, len(backends))
	for name, b := range backends {
		out[name] = m.Guard(b.client, prom.GuardOptions{MaxConcurrent: b.maxConcurrent, Timeout: b.timeout}, name)
	}
	return out
}

// GuardedBackends reads --prometheus-backends-file and returns the clients of its
// backends, each in its own Guard counting in m, as the adapter runs them, and their
// names in file order. No file gives no backends.
func (o *Options) GuardedBackends(m *prom.GuardMetrics) (prom.Backends, []string, error) {
	backends, names, err := o.loadBackends()
	if err != nil {
		return nil, nil, err
	}
	return guardBackends(m, backends), names, nil
}
