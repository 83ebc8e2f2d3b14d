package server

import (
	"github.com/ebbflow/ebbflow/adapter/prom"
)

// loadBackends reads --prometheus-backends-file (none: no named backends) and
// builds a client per backend through prom.LoadBackendClients, with this
// adapter's flags as the defaults a backend may leave unset.
func (o *Options) loadBackends() (map[string]prom.BackendClient, []string, error) {
	return prom.LoadBackendClients(o.BackendsFile, prom.BackendDefaults{
		Timeout: o.PrometheusTimeout, MaxConcurrent: o.MaxConcurrentQueries,
		MaxResponseBytes: o.MaxResponseBytes, DisableHTTP2: o.Transport.DisableHTTP2,
	})
}

// guardBackends wraps every client in its own Guard: each backend has its own
// concurrency slots (maxConcurrentQueries or --max-concurrent-queries) and
// singleflight, and self-metrics labelled by its name.
func guardBackends(m *prom.GuardMetrics, backends map[string]prom.BackendClient) prom.Backends {
	out := make(prom.Backends, len(backends))
	for name, b := range backends {
		out[name] = m.Guard(b.Client, prom.GuardOptions{MaxConcurrent: b.MaxConcurrent, Timeout: b.Timeout}, name)
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
