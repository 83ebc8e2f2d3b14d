package server

import (
	"context"
	"errors"
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/objects"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/upstream"
)

type completedConfig struct {
	opts   Options
	rules  *rules.Set
	apis   apigroups.Served
	disc   *discovery.Discoverer
	lister *objects.CacheLister
	// resAPI serves metrics.k8s.io; nil when it is not served.
	resAPI *resourceAPI
	reload *reloader
	// upstreams forwards what Ebbflow's rules do not serve; nil without
	// --upstreams-file.
	upstreams *upstream.Router
	server    *apiserver.CustomMetricsAdapterServer
	// base is the context requests of metrics.k8s.io run under (metrics-server's
	// getters take none); Run cancels it when its own context is done.
	base       context.Context
	cancelBase context.CancelFunc
	backends   []string
}

// CompletedConfig is the adapter built and ready to run; only Complete makes one.
type CompletedConfig struct {
	*completedConfig
}

// Complete builds the adapter from the config: a Guard per Prometheus backend,
// discovery with the rules, the object cache, the providers, the API server with
// its filters, readiness checks and the groups it serves, and the rule-file
// reloader. Nothing runs until Run. The caller's options are not changed: the
// generic API server is configured from a copy of their serving options.
func (c *Config) Complete() (CompletedConfig, error) {
	o := c.Options
	guards, err := prom.NewGuardMetrics(c.Registerer)
	if err != nil {
		return CompletedConfig{}, err
	}
	guard := guards.Guard(c.Prom, prom.GuardOptions{MaxConcurrent: o.MaxConcurrentQueries, Timeout: o.PrometheusTimeout}, rulefile.DefaultBackend)
	named := guards.GuardBackends(c.Backends)
	disc, err := discovery.New(discovery.Options{Client: guard, Backends: named, Scope: discovery.MapperScope{Mapper: c.Mapper}, MaxAge: o.MaxAge, MaxSeries: o.MaxSeries, Registerer: c.Registerer})
	if err != nil {
		return CompletedConfig{}, err
	}
	disc.SetRules(c.Rules.Rules)

	restConfig := c.RESTConfig
	metaClient, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return CompletedConfig{}, err
	}
	lister := objects.NewCacheLister(metaClient, c.Mapper, 0)
	prov, err := provider.New(provider.Options{
		Prom: guard, Backends: named, Discovery: disc, Lister: lister, Mapper: c.Mapper,
		NamespaceQueryThreshold: o.NamespaceQueryThreshold, Registerer: c.Registerer,
		NaNValues: o.NaNValues,
	})
	if err != nil {
		return CompletedConfig{}, err
	}
	cc := &completedConfig{opts: o, rules: c.Rules, disc: disc, lister: lister, backends: c.BackendNames}
	cc.base, cc.cancelBase = context.WithCancel(context.Background())
	// custom.metrics.k8s.io and external.metrics.k8s.io are served whatever the rule
	// file holds, so that their APIServices are Available and a reload adding the
	// first rule of a kind needs no restart; metrics.k8s.io as --resource-metrics says.
	cc.apis = apigroups.Select(o.ResourceMetrics, c.Rules)
	var custom cmprovider.CustomMetricsProvider
	var external cmprovider.ExternalMetricsProvider
	var histories Histories
	if cc.apis.Custom {
		custom, histories = prov, prov
	}
	if cc.apis.External {
		external = prov
	}
	if custom, external, cc.upstreams, err = c.withUpstreams(restConfig, c.Mapper, disc, custom, external); err != nil {
		return CompletedConfig{}, err
	}
	if cc.apis.Resource {
		// Nil resourceRules (--resource-metrics=enabled): no metrics until a reload.
		resProv, err := provider.NewResource(provider.ResourceOptions{
			Prom: guard, Backends: named, NamespaceQueryThreshold: o.NamespaceQueryThreshold, Registerer: c.Registerer,
		}, c.Rules.Resource)
		if err != nil {
			return CompletedConfig{}, err
		}
		if cc.resAPI, err = newResourceAPI(lister, resProv, restConfig); err != nil {
			return CompletedConfig{}, err
		}
	}
	generic, err := o.genericConfig(restConfig, cc.apis)
	if err != nil {
		return CompletedConfig{}, err
	}
	if cc.server, err = NewMetricsServer(&generic.Config, generic.SharedInformerFactory, o.Base.Name, custom, external, histories); err != nil {
		return CompletedConfig{}, err
	}
	if cc.resAPI != nil {
		if err := cc.resAPI.install(cc.base, cc.server.GenericAPIServer, o.PrometheusTimeout); err != nil {
			return CompletedConfig{}, err
		}
	}
	if err := cc.server.GenericAPIServer.AddReadyzChecks(healthz.NamedCheck("metric-discovery", func(_ *http.Request) error {
		if !disc.Synced() {
			return errors.New("no successful metric discovery yet")
		}
		return nil
	})); err != nil {
		return CompletedConfig{}, err
	}
	if cc.reload, err = newReloader(o.ConfigFile, c.Rules.Hash, rules.Options{Mapper: c.Mapper, Backends: c.BackendNames}, disc, c.Registerer); err != nil {
		return CompletedConfig{}, err
	}
	cc.reload.resourceMode = o.ResourceMetrics
	if cc.resAPI != nil {
		cc.reload.resource = cc.resAPI.provider
	}
	return CompletedConfig{cc}, nil
}

// genericConfig is the generic API server's configuration from a copy of o's
// serving, authentication, authorization, audit and feature options (applying
// them writes generated certificates into the copy, not into o), with OpenAPI
// definitions of the groups apis serves.
func (o Options) genericConfig(restConfig *rest.Config, apis apigroups.Served) (*genericapiserver.RecommendedConfig, error) {
	serving := *o.Base.CustomMetricsAdapterServerOptions
	secure := *serving.SecureServing
	inner := *secure.SecureServingOptions
	secure.SecureServingOptions = &inner
	serving.SecureServing = &secure
	if o.Transport.DisableHTTP2 {
		inner.DisableHTTP2Serving = true
	}
	serving.OpenAPIConfig, serving.OpenAPIV3Config = nil, nil
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	rc := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	rc.ClientConfig = restConfig
	rc.SharedInformerFactory = informers.NewSharedInformerFactory(client, 0)
	if err := serving.ApplyTo(rc); err != nil {
		return nil, err
	}
	setOpenAPI(&rc.Config, o.Base.Name, apis)
	return rc, nil
}
