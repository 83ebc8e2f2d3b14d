package prom

import (
	"fmt"
	"net/http"
	"time"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// BackendClient is one named backend of a backends file: its HTTP client and
// the limits it asks for, before any guarding.
type BackendClient struct {
	Client *HTTPClient
	// Timeout caps every request: the backend's timeout, else the default given
	// to LoadBackendClients.
	Timeout time.Duration
	// MaxConcurrent is the backend's maxConcurrentQueries, else the default.
	MaxConcurrent int
}

// BackendDefaults are what a backend that does not say otherwise inherits from
// the flags of the default backend. Connection settings (URL, TLS, auth,
// headers) are never inherited: each backend says how it is reached.
type BackendDefaults struct {
	Timeout          time.Duration
	MaxConcurrent    int
	MaxResponseBytes int64
	DisableHTTP2     bool
}

// LoadBackendClients reads the backends file at path (--prometheus-backends-file)
// and builds one client per backend. It returns the clients by name and the
// names in file order; an empty path gives no backends and no error. Errors
// name the file and the field (backends[1].url) or the backend.
func LoadBackendClients(path string, def BackendDefaults) (map[string]BackendClient, []string, error) {
	if path == "" {
		return nil, nil, nil
	}
	f, err := rulefile.LoadBackendsFile(path)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]BackendClient, len(f.Backends))
	for _, b := range f.Backends {
		c, err := newBackendClient(b, def.MaxResponseBytes, def.DisableHTTP2)
		if err != nil {
			return nil, nil, fmt.Errorf("backends file %s: backend %q: %w", path, b.Name, err)
		}
		bc := BackendClient{Client: c, Timeout: time.Duration(b.Timeout), MaxConcurrent: b.MaxConcurrentQueries}
		if bc.Timeout == 0 {
			bc.Timeout = def.Timeout
		}
		if bc.MaxConcurrent == 0 {
			bc.MaxConcurrent = def.MaxConcurrent
		}
		out[b.Name] = bc
	}
	return out, f.Names(), nil
}

// newBackendClient builds the HTTP client of one validated backend.
func newBackendClient(b rulefile.Backend, maxResponse int64, disableHTTP2 bool) (*HTTPClient, error) {
	t := TransportOptions{
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
	hc, err := NewHTTPTransportClient(t)
	if err != nil {
		return nil, err
	}
	verb := Verb(b.Verb)
	if verb == "" {
		verb = VerbGET
	}
	return NewHTTPClient(b.URL, hc, verb, WithMaxResponseBytes(maxResponse))
}
