package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/metadata"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/config"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/objects"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/ruleset"
)

// Config is validated options turned into the pieces the adapter runs on.
type Config struct {
	opts   *Options
	mapper meta.RESTMapper
	prom   prom.Client
	// backends are the named backends of --prometheus-backends-file, by name.
	backends     map[string]prom.BackendClient
	backendNames []string
	rules        *ruleset.Set
	// Registerer receives self-metrics; nil means the API server's /metrics registry.
	Registerer prometheus.Registerer
}

// Config validates the options and builds the Prometheus client, the RESTMapper
// and the first rule set. A rule file with problems is an error listing them all.
func (o *Options) Config() (*Config, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	pc, err := o.ConnectionOptions.Client()
	if err != nil {
		return nil, err
	}
	backends, names, err := o.loadBackends()
	if err != nil {
		return nil, err
	}
	if o.Transport.DisableHTTP2 {
		o.Base.SecureServing.DisableHTTP2Serving = true
	}
	mapper, err := o.Base.RESTMapper()
	if err != nil {
		return nil, fmt.Errorf("rest mapper: %w", err)
	}
	set, err := ruleset.ParseFileWith(o.ConfigFile, ruleset.Options{Mapper: mapper, Backends: names})
	if err != nil {
		return nil, fmt.Errorf("rule file %s:\n%w", o.ConfigFile, err)
	}
	return &Config{opts: o, mapper: mapper, prom: pc, backends: backends, backendNames: names, rules: set}, nil
}

type completedConfig struct {
	*Config
}

// CompletedConfig is a Config with defaults applied; only it can Run.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in defaults.
func (c *Config) Complete() CompletedConfig {
	if c.opts.MaxAge == 0 {
		c.opts.MaxAge = c.opts.RelistInterval
	}
	if c.Registerer == nil {
		c.Registerer = legacyregistry.Registerer()
	}
	return CompletedConfig{&completedConfig{c}}
}

// Run serves until ctx is done. Discovery, rule-file reloads and the object cache
// run alongside the API server and stop with it.
func (c CompletedConfig) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	o := c.opts
	guards, err := prom.NewGuardMetrics(c.Registerer)
	if err != nil {
		return err
	}
	guard := guards.Guard(c.prom, prom.GuardOptions{MaxConcurrent: o.MaxConcurrentQueries, Timeout: o.PrometheusTimeout}, config.DefaultBackend)
	named := guardBackends(guards, c.backends)
	disc, err := discovery.New(discovery.Options{Client: guard, Backends: named, Scope: discovery.MapperScope{Mapper: c.mapper}, MaxAge: o.MaxAge, MaxSeries: o.MaxSeries, Registerer: c.Registerer})
	if err != nil {
		return err
	}
	disc.SetRules(c.rules.Rules)
	logRuleSet(logger, c.rules)
	if len(c.backendNames) > 0 {
		logger.Info("Named Prometheus backends", "file", o.BackendsFile, "backends", c.backendNames)
	}
	for _, note := range o.Transport.Ignored() {
		logger.Info("Prometheus connection option ignored", "reason", note)
	}

	restConfig, err := o.Base.ClientConfig()
	if err != nil {
		return err
	}
	metaClient, err := metadata.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	lister := objects.NewCacheLister(metaClient, c.mapper, 0)
	if err := lister.Start(ctx, schema.GroupResource{Resource: "pods"}); err != nil {
		return err
	}
	prov, err := provider.New(provider.Options{
		Prom: guard, Backends: named, Discovery: disc, Lister: lister, Mapper: c.mapper,
		NamespaceQueryThreshold: o.NamespaceQueryThreshold, Registerer: c.Registerer,
		NaNValues: o.NaNValues,
	})
	if err != nil {
		return err
	}
	// custom.metrics.k8s.io and external.metrics.k8s.io are served whatever the rule
	// file holds, so that their APIServices are Available and a reload adding the
	// first rule of a kind needs no restart; metrics.k8s.io as --resource-metrics says.
	apis := selectAPIs(o.ResourceMetrics, c.rules)
	logAPIs(logger, apis, o.ResourceMetrics, c.rules)
	if apis.Custom {
		o.Base.WithCustomMetrics(prov)
	}
	if apis.External {
		o.Base.WithExternalMetrics(prov)
	}
	var resAPI *resourceAPI
	if apis.Resource {
		// Nil resourceRules (--resource-metrics=enabled): no metrics until a reload.
		resProv, err := provider.NewResource(provider.ResourceOptions{
			Prom: guard, Backends: named, NamespaceQueryThreshold: o.NamespaceQueryThreshold, Registerer: c.Registerer,
		}, c.rules.Resource)
		if err != nil {
			return err
		}
		if resAPI, err = newResourceAPI(lister, resProv, restConfig); err != nil {
			return err
		}
	}
	o.setOpenAPI(apis.Custom, apis.External, apis.Resource)
	apiConfig, err := o.Base.Config()
	if err != nil {
		return err
	}
	InstallFilters(apiConfig.GenericConfig)
	srv, err := o.Base.Server()
	if err != nil {
		return err
	}
	if resAPI != nil {
		if err := resAPI.install(ctx, srv.GenericAPIServer, o.PrometheusTimeout); err != nil {
			return err
		}
	}
	if err := srv.GenericAPIServer.AddReadyzChecks(healthz.NamedCheck("metric-discovery", func(_ *http.Request) error {
		if !disc.Synced() {
			return errors.New("no successful metric discovery yet")
		}
		return nil
	})); err != nil {
		return err
	}
	reload, err := newReloader(o.ConfigFile, c.rules.Hash, ruleset.Options{Mapper: c.mapper, Backends: c.backendNames}, disc, c.Registerer)
	if err != nil {
		return err
	}
	reload.resourceMode = o.ResourceMetrics
	if resAPI != nil {
		reload.resource = resAPI.provider
	}
	go disc.Run(ctx, o.RelistInterval)
	go reload.run(ctx, o.ConfigCheckInterval)
	return srv.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// logRuleSet logs what a rule set serves and what it does not.
func logRuleSet(logger klog.Logger, set *ruleset.Set) {
	custom, external := set.Counts()
	logger.Info("Loaded rule file", "customRules", custom, "externalRules", external, "sha256", set.Hash)
	for _, w := range set.Warnings {
		logger.Info("Rule file warning", "warning", w.Error())
	}
	if set.Resource != nil {
		logger.Info("Loaded resourceRules", "window", set.Resource.Window)
	}
}
