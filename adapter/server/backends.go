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
