// Package provider answers custom.metrics.k8s.io and external.metrics.k8s.io requests
// for custom-metrics-apiserver: one lookup in discovery per request (Discovery), the
// rule's query rendered with the request's selector walked once, sent to the rule's
// Prometheus backend, and the samples indexed by the resource label the query used.
// ResourceProvider (resource*.go) answers metrics.k8s.io from resourceRules for
// metrics-server's REST storage.
//
// Errors returned to the API are typed Kubernetes status errors: 404 for a metric or
// object without data, 400 for a bad metric selector, 500 with a generic message for
// any failure behind the adapter. Queries, URLs and Prometheus' own messages are only
// logged, never returned.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/objects"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// Discovery is what the provider needs of discovery: one lookup per request, which
// checks the metric name, normalises the resource, looks the metric up, discovers it
// on a miss and answers a typed 404 when nothing serves it; and the lists of metrics.
type Discovery interface {
	LookupCustom(ctx context.Context, info provider.CustomMetricInfo) (provider.CustomMetricInfo, discovery.Target, error)
	LookupExternal(ctx context.Context, metric string) (discovery.Target, error)
	CustomMetrics() []provider.CustomMetricInfo
	ExternalMetrics() []provider.ExternalMetricInfo
}

var _ Discovery = (*discovery.Discoverer)(nil)

// DefaultNamespaceQueryThreshold is the number of object names above which a
// selector request queries the whole namespace and filters the answer, when the
// rule's query allows it.
const DefaultNamespaceQueryThreshold = 100

// Options configure a Provider.
type Options struct {
	// Prom is the default backend's client.
	Prom prom.Client
	// Backends are the clients of the named backends rules may select.
	Backends  prom.Backends
	Discovery Discovery
	Lister    objects.Lister
	Mapper    meta.RESTMapper
	// NamespaceQueryThreshold: see DefaultNamespaceQueryThreshold; 0 means default,
	// negative means never query by namespace.
	NamespaceQueryThreshold int
	Registerer              prometheus.Registerer
	// NaNValues is what a NaN sample becomes for rules that do not say
	// (rulefile.NaNZero, the default when empty, or rulefile.NaNDrop).
	NaNValues string
}

// Provider implements custom-metrics-apiserver's MetricsProvider.
type Provider struct {
	opts    Options
	clients prom.Backends
	metrics *apiMetrics
}

var _ provider.MetricsProvider = (*Provider)(nil)

// New returns a Provider; all options but NamespaceQueryThreshold are required.
func New(opts Options) (*Provider, error) {
	if opts.Prom == nil || opts.Discovery == nil || opts.Lister == nil || opts.Mapper == nil || opts.Registerer == nil {
		return nil, errors.New("provider: prom, discovery, lister, mapper and registerer are required")
	}
	switch opts.NaNValues {
	case "":
		opts.NaNValues = rulefile.NaNZero
	case rulefile.NaNZero, rulefile.NaNDrop:
	default:
		return nil, fmt.Errorf("provider: NaN values must be %q or %q, not %q", rulefile.NaNZero, rulefile.NaNDrop, opts.NaNValues)
	}
	if opts.NamespaceQueryThreshold == 0 {
		opts.NamespaceQueryThreshold = DefaultNamespaceQueryThreshold
	}
	m, err := newAPIMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Provider{opts: opts, clients: prom.WithDefault(opts.Prom, opts.Backends), metrics: m}, nil
}

// ListAllMetrics implements provider.CustomMetricsProvider.
func (p *Provider) ListAllMetrics() []provider.CustomMetricInfo {
	return p.opts.Discovery.CustomMetrics()
}

// ListAllExternalMetrics implements provider.ExternalMetricsProvider.
func (p *Provider) ListAllExternalMetrics() []provider.ExternalMetricInfo {
	return p.opts.Discovery.ExternalMetrics()
}

// errInternal is the only text a caller sees for failures behind the adapter.
var errInternal = errors.New("unable to fetch metrics")

// queryError turns an error from rendering a query into an API error.
func queryError(ctx context.Context, err error) error {
	if errors.Is(err, rules.ErrBadSelector) {
		return apierrors.NewBadRequest(err.Error())
	}
	logError(ctx, err, "Rendering the metrics query failed")
	return apierrors.NewInternalError(errInternal)
}

// query sends q to the backend of rule; failures become a generic 500 with detail
// logged, so a backend that is down fails only the requests for its rules' metrics.
func (p *Provider) query(ctx context.Context, rule *rules.Rule, q string) (vectorResult, error) {
	c, err := p.clients.For(rule.Backend())
	if err != nil {
		logError(ctx, err, "No client for the rule's backend")
		return nil, apierrors.NewInternalError(errInternal)
	}
	v, err := c.Query(ctx, q)
	if err != nil {
		logError(ctx, err, "Querying Prometheus failed", "backend", backendLabel(rule.Backend()), "query", q)
		return nil, apierrors.NewInternalError(errInternal)
	}
	return vectorResult(v), nil
}

// backendLabel names a backend in logs: "" is rulefile.DefaultBackend.
func backendLabel(name string) string {
	if name == "" {
		return rulefile.DefaultBackend
	}
	return name
}

// observe records one API request's outcome and duration.
func (p *Provider) observe(api string, start time.Time, err error) {
	p.metrics.observe(api, outcomeOf(err), time.Since(start))
}

func outcomeOf(err error) string {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "success"
	case apierrors.IsNotFound(err):
		return "not_found"
	case apierrors.IsBadRequest(err):
		return "bad_request"
	case errors.As(err, &status):
		return fmt.Sprintf("error_%d", status.Status().Code)
	default:
		return "error"
	}
}

type apiMetrics struct {
	requests *prometheus.HistogramVec
}

func newAPIMetrics(reg prometheus.Registerer) (*apiMetrics, error) {
	m := &apiMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ebbflow_adapter", Subsystem: "api", Name: "request_duration_seconds",
			Help:    "Duration of metrics API requests answered by the provider, by API group and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"group", "outcome"}),
	}
	if err := reg.Register(m.requests); err != nil {
		// The custom/external and the resource providers share the histogram.
		var are prometheus.AlreadyRegisteredError
		existing, ok := (*prometheus.HistogramVec)(nil), false
		if errors.As(err, &are) {
			existing, ok = are.ExistingCollector.(*prometheus.HistogramVec)
		}
		if !ok {
			return nil, err
		}
		m.requests = existing
	}
	return m, nil
}

func (m *apiMetrics) observe(group, outcome string, d time.Duration) {
	m.requests.WithLabelValues(group, outcome).Observe(d.Seconds())
}
