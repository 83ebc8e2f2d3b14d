package server

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/upstream"
)

// loadUpstreams reads --upstreams-file (none: no upstreams).
func (o *Options) loadUpstreams() ([]upstream.Config, error) {
	if o.UpstreamsFile == "" {
		return nil, nil
	}
	return upstream.Load(o.UpstreamsFile)
}

// registryServed answers upstream.Served from discovery's current registry.
type registryServed struct{ disc *discovery.Discoverer }

var _ upstream.Served = registryServed{}

func (s registryServed) ServesCustom(info cmprovider.CustomMetricInfo) bool {
	_, ok := s.disc.Registry().Custom(info)
	return ok
}

func (s registryServed) ServesExternal(metric string) bool {
	_, ok := s.disc.Registry().External(metric)
	return ok
}

// withUpstreams puts the router of the config's upstreams in front of
// Ebbflow's own providers (nil: that group is not Ebbflow's own); with no
// upstreams it returns them unchanged and a nil router. Requests are
// forwarded with identity, the adapter's own client configuration.
func (c *Config) withUpstreams(identity *rest.Config, mapper meta.RESTMapper, disc *discovery.Discoverer, custom cmprovider.CustomMetricsProvider, external cmprovider.ExternalMetricsProvider) (cmprovider.CustomMetricsProvider, cmprovider.ExternalMetricsProvider, *upstream.Router, error) {
	if len(c.Upstreams) == 0 {
		return custom, external, nil, nil
	}
	r, err := upstream.New(upstream.Options{
		Upstreams: c.Upstreams, Identity: identity, Custom: custom, External: external,
		Served: registryServed{disc}, Normalize: discovery.MapperScope{Mapper: mapper}.Normalize,
		Registerer: c.Registerer,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return r, r, r, nil
}

// logUpstreams logs the upstreams and what each serves (names, no URLs).
func logUpstreams(logger klog.Logger, r *upstream.Router) {
	if r == nil {
		return
	}
	for _, u := range r.Upstreams() {
		logger.Info("Forwarding to upstream", "upstream", u.Name(), "groups", u.Config().Groups, "timeout", u.Config().RequestTimeout())
	}
}
