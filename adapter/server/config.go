package server

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics/legacyregistry"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/dynamicmapper"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/adapter/upstream"
)

// Config is validated options turned into what the adapter is built from. It holds
// its own copy of the options, defaults filled in: the caller's are never changed,
// neither here nor by Complete (their Base is only read).
type Config struct {
	Options Options
	// RESTConfig reaches the cluster (--lister-kubeconfig, or in-cluster).
	RESTConfig *rest.Config
	Mapper     meta.RESTMapper
	// Prom is the default backend's client (--prometheus-url).
	Prom prom.Client
	// Backends are the named backends of --prometheus-backends-file, by name, and
	// BackendNames their names in file order.
	Backends     map[string]prom.BackendClient
	BackendNames []string
	// Rules is the rule file at start.
	Rules *rules.Set
	// Upstreams are the upstreams of --upstreams-file, in file order.
	Upstreams []upstream.Config
	// Registerer receives self-metrics: the API server's /metrics registry unless
	// set before Complete.
	Registerer prometheus.Registerer
}

// Config validates the options and builds the Prometheus clients, the RESTMapper
// and the first rule set. A rule file with problems is an error listing them all.
func (o *Options) Config() (*Config, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	opts := *o
	if opts.MaxAge == 0 {
		opts.MaxAge = opts.RelistInterval
	}
	pc, err := opts.ConnectionOptions.Client()
	if err != nil {
		return nil, err
	}
	backends, names, err := opts.loadBackends()
	if err != nil {
		return nil, err
	}
	ups, err := opts.loadUpstreams()
	if err != nil {
		return nil, err
	}
	restConfig, err := kubeConfig(opts.Base)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper, err := dynamicmapper.NewRESTMapper(dc, opts.Base.DiscoveryInterval)
	if err != nil {
		return nil, fmt.Errorf("rest mapper: %w", err)
	}
	set, err := rules.ParseFileWith(opts.ConfigFile, rules.Options{Mapper: mapper, Backends: names})
	if err != nil {
		return nil, fmt.Errorf("rule file %s:\n%w", opts.ConfigFile, err)
	}
	return &Config{
		Options: opts, RESTConfig: restConfig, Mapper: mapper, Prom: pc, Backends: backends, BackendNames: names,
		Rules: set, Upstreams: ups, Registerer: legacyregistry.Registerer(),
	}, nil
}

// kubeConfig is the client configuration of b's flags: --lister-kubeconfig
// (in-cluster when empty), --client-qps and --client-burst. It reads b only
// (custom-metrics-apiserver's builder caches what it builds in b).
func kubeConfig(b *basecmd.AdapterBase) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if b.RemoteKubeConfigFile != "" {
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: b.RemoteKubeConfigFile}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("lister client config: %w", err)
	}
	if b.ClientQPS > 0 {
		cfg.QPS = b.ClientQPS
	}
	if b.ClientBurst > 0 {
		cfg.Burst = b.ClientBurst
	}
	return cfg, nil
}
