// Package server assembles ebbflow-adapter as metrics-server does: Options (the
// flags) → Config (validated, a copy of the options with defaults filled, the
// Prometheus clients, the RESTMapper and the rule file; config.go) → Complete
// (builds discovery, the object cache, the providers, the aggregated API server
// with its filters and readiness checks, the rule-file reloader; complete.go) →
// Run (starts them and serves, building nothing; run.go).
package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	basecmd "sigs.k8s.io/custom-metrics-apiserver/pkg/cmd"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// Options are ebbflow-adapter's command-line options. Names and meanings of the
// prometheus-adapter flags are kept so its users can swap the binary.
type Options struct {
	// Base holds the generic API server flags (serving, authn, authz, audit) and the
	// Kubernetes client flags, from custom-metrics-apiserver.
	Base *basecmd.AdapterBase

	// ConnectionOptions say where Prometheus is and how to reach it (the
	// flags `ebbflow simulate` shares).
	prom.ConnectionOptions

	ConfigFile              string
	RelistInterval          time.Duration
	MaxAge                  time.Duration
	MaxConcurrentQueries    int
	NamespaceQueryThreshold int
	ConfigCheckInterval     time.Duration
	NaNValues               string
	MaxSeries               int
	BackendsFile            string
	// ResourceMetrics is when metrics.k8s.io is served: auto, enabled or disabled.
	ResourceMetrics string
	// UpstreamsFile lists other metrics servers requests are forwarded to
	// (docs/upstreams.md).
	UpstreamsFile string
}

// NewOptions returns options with their defaults.
func NewOptions() *Options {
	return &Options{
		Base:                    &basecmd.AdapterBase{Name: "ebbflow-adapter"},
		ConnectionOptions:       prom.NewConnectionOptions("https://localhost"),
		RelistInterval:          time.Minute,
		MaxConcurrentQueries:    16,
		NamespaceQueryThreshold: provider.DefaultNamespaceQueryThreshold,
		ConfigCheckInterval:     10 * time.Second,
		NaNValues:               rulefile.NaNZero,
		MaxSeries:               discovery.DefaultMaxSeries,
		ResourceMetrics:         apigroups.ResourceMetricsAuto,
	}
}

// AddFlags registers all flags on fs, including the generic API server ones.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Base.FlagSet = fs
	o.Base.InstallFlags()
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "Rule file (prometheus-adapter format). Required. Reloaded when it changes.")
	o.ConnectionOptions.AddFlags(fs)
	fs.BoolVar(&o.Transport.DisableHTTP2, "disable-http2", false, "Disable HTTP/2 for serving and for requests to Prometheus.")
	fs.DurationVar(&o.RelistInterval, "metrics-relist-interval", o.RelistInterval, "Interval between full discoveries of available metrics.")
	fs.DurationVar(&o.MaxAge, "metrics-max-age", 0, "Age of the oldest series discovered; 0 means the relist interval. May not be smaller than it.")
	fs.IntVar(&o.MaxConcurrentQueries, "max-concurrent-queries", o.MaxConcurrentQueries, "Most requests in flight to Prometheus at once; identical concurrent queries are sent once.")
	fs.IntVar(&o.NamespaceQueryThreshold, "namespace-query-threshold", o.NamespaceQueryThreshold, "Object count above which a selector request queries the whole namespace and filters the answer (only for rules whose query groups by the resource label); negative disables.")
	fs.DurationVar(&o.ConfigCheckInterval, "config-check-interval", o.ConfigCheckInterval, "How often the rule file is checked for changes.")
	fs.StringVar(&o.NaNValues, "nan-values", o.NaNValues, "What a NaN sample becomes (e.g. a rate ratio with no traffic): zero serves 0, as prometheus-adapter does; drop serves no sample, so autoscalers see the metric as missing. A rule's nanValues overrides it.")
	fs.StringVar(&o.BackendsFile, "prometheus-backends-file", o.BackendsFile, "YAML file of named Prometheus backends (URL, headers, TLS and auth per backend) that rules select with their backend field; --prometheus-url is the backend named default. Read at start.")
	fs.StringVar(&o.ResourceMetrics, "resource-metrics", o.ResourceMetrics, "When to serve metrics.k8s.io (pods, nodes) from resourceRules: auto serves it when the rule file has resourceRules at start (prometheus-adapter's behaviour; adding them later needs a restart); enabled always serves it, without metrics until resourceRules are loaded; disabled never does. custom.metrics.k8s.io and external.metrics.k8s.io are always served.")
	fs.StringVar(&o.UpstreamsFile, "upstreams-file", o.UpstreamsFile, "YAML file of upstream metrics servers (name, url or service, CA, groups, timeout): a custom or external metric Ebbflow's rules do not serve is forwarded to the first upstream listing it, with the adapter's own credentials; upstreams are relisted every --metrics-relist-interval. Read at start.")
	fs.IntVar(&o.MaxSeries, "metrics-max-series", o.MaxSeries, "Most series one discovery may list; a relist listing more fails and the last good metrics stay served.")
}

// Validate reports every problem with the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.ConfigFile == "" {
		errs = append(errs, errors.New("--config is required"))
	}
	if o.RelistInterval <= 0 {
		errs = append(errs, errors.New("--metrics-relist-interval must be positive"))
	}
	if o.MaxAge != 0 && o.MaxAge < o.RelistInterval {
		errs = append(errs, errors.New("--metrics-max-age must not be smaller than --metrics-relist-interval"))
	}
	if o.MaxConcurrentQueries < 1 {
		errs = append(errs, errors.New("--max-concurrent-queries must be at least 1"))
	}
	if o.NaNValues != rulefile.NaNZero && o.NaNValues != rulefile.NaNDrop {
		errs = append(errs, fmt.Errorf("--nan-values must be %q or %q, not %q", rulefile.NaNZero, rulefile.NaNDrop, o.NaNValues))
	}
	if !slices.Contains(apigroups.ResourceMetricsModes, o.ResourceMetrics) {
		errs = append(errs, fmt.Errorf("--resource-metrics must be one of %s, not %q", strings.Join(apigroups.ResourceMetricsModes, ", "), o.ResourceMetrics))
	}
	if o.MaxSeries < 1 {
		errs = append(errs, errors.New("--metrics-max-series must be at least 1"))
	}
	if o.ConfigCheckInterval <= 0 {
		errs = append(errs, errors.New("--config-check-interval must be positive"))
	}
	errs = append(errs, o.ConnectionOptions.Validate()...)
	if o.Base.CustomMetricsAdapterServerOptions != nil {
		errs = append(errs, o.Base.CustomMetricsAdapterServerOptions.Validate()...)
	}
	return errs
}
