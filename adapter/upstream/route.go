package upstream

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	"k8s.io/metrics/pkg/apis/external_metrics"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// Served tells which metrics Ebbflow's own rules serve now (its discovery's
// registry); a metric it serves is answered by Ebbflow even when an upstream
// lists it too.
type Served interface {
	// ServesCustom is asked with a normalised info (plural resource in its
	// group).
	ServesCustom(info provider.CustomMetricInfo) bool
	ServesExternal(metric string) bool
}

// Options configure a Router.
type Options struct {
	Upstreams []Config
	// Identity is the client configuration Ebbflow forwards with: its own
	// credentials (service account token or client certificate), never the
	// caller's.
	Identity *rest.Config
	// Custom and External are Ebbflow's own providers; nil when Ebbflow does
	// not serve that group itself.
	Custom   provider.CustomMetricsProvider
	External provider.ExternalMetricsProvider
	Served   Served
	// Normalize gives a request's info as Served and the upstreams' lists key
	// it; an error leaves the info as asked.
	Normalize  func(provider.CustomMetricInfo) (provider.CustomMetricInfo, error)
	Registerer prometheus.Registerer
}

// Router answers custom.metrics.k8s.io and external.metrics.k8s.io for
// custom-metrics-apiserver: each request goes to Ebbflow's own provider when
// its rules serve the metric, else to the first upstream (in file order)
// listing it, else to Ebbflow's own provider (which may discover it on demand,
// or answers 404). Discovery lists the union.
type Router struct {
	opts      Options
	upstreams []*Upstream
	metrics   *metrics
}

var (
	_ provider.CustomMetricsProvider   = (*Router)(nil)
	_ provider.ExternalMetricsProvider = (*Router)(nil)
)

// New builds the router and one client per upstream; nothing is listed until
// Discover or Run.
func New(opts Options) (*Router, error) {
	if opts.Served == nil || opts.Normalize == nil || opts.Registerer == nil {
		return nil, errors.New("upstream: served, normalize and registerer are required")
	}
	if err := Validate(opts.Upstreams); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	r := &Router{opts: opts, metrics: m}
	for _, c := range opts.Upstreams {
		u, err := newUpstream(opts.Identity, c, m)
		if err != nil {
			return nil, err
		}
		r.upstreams = append(r.upstreams, u)
	}
	return r, nil
}

// Upstreams are the upstreams in file order.
func (r *Router) Upstreams() []*Upstream { return r.upstreams }

// normalize is info as the lists key it.
func (r *Router) normalize(info provider.CustomMetricInfo) provider.CustomMetricInfo {
	if n, err := r.opts.Normalize(info); err == nil {
		return n
	}
	return info
}

// customUpstream is the upstream answering info, nil for Ebbflow itself.
func (r *Router) customUpstream(info provider.CustomMetricInfo) *Upstream {
	n := r.normalize(info)
	if r.opts.Custom != nil && r.opts.Served.ServesCustom(n) {
		return nil
	}
	for _, u := range r.upstreams {
		if u.cfg.Serves(GroupCustom) && u.ListsCustom(n) {
			return u
		}
	}
	return nil
}

// externalUpstream is the upstream answering metric, nil for Ebbflow itself.
func (r *Router) externalUpstream(metric string) *Upstream {
	if r.opts.External != nil && r.opts.Served.ServesExternal(metric) {
		return nil
	}
	for _, u := range r.upstreams {
		if u.cfg.Serves(GroupExternal) && u.ListsExternal(metric) {
			return u
		}
	}
	return nil
}

// GetMetricByName implements provider.CustomMetricsProvider.
func (r *Router) GetMetricByName(ctx context.Context, name types.NamespacedName, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValue, error) {
	if u := r.customUpstream(info); u != nil {
		return u.GetMetricByName(ctx, name, r.normalize(info), metricSelector)
	}
	if r.opts.Custom == nil {
		return nil, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	return r.opts.Custom.GetMetricByName(ctx, name, info, metricSelector)
}

// GetMetricBySelector implements provider.CustomMetricsProvider.
func (r *Router) GetMetricBySelector(ctx context.Context, namespace string, selector labels.Selector, info provider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error) {
	if u := r.customUpstream(info); u != nil {
		return u.GetMetricBySelector(ctx, namespace, selector, r.normalize(info), metricSelector)
	}
	if r.opts.Custom == nil {
		return nil, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	return r.opts.Custom.GetMetricBySelector(ctx, namespace, selector, info, metricSelector)
}

// GetExternalMetric implements provider.ExternalMetricsProvider.
func (r *Router) GetExternalMetric(ctx context.Context, namespace string, metricSelector labels.Selector, info provider.ExternalMetricInfo) (*external_metrics.ExternalMetricValueList, error) {
	if u := r.externalUpstream(info.Metric); u != nil {
		return u.GetExternalMetric(ctx, namespace, metricSelector, info)
	}
	if r.opts.External == nil {
		return nil, provider.NewMetricNotFoundError(externalResource, info.Metric)
	}
	return r.opts.External.GetExternalMetric(ctx, namespace, metricSelector, info)
}

// ListAllMetrics implements provider.CustomMetricsProvider: Ebbflow's own
// metrics, then each upstream's that no earlier source lists.
func (r *Router) ListAllMetrics() []provider.CustomMetricInfo {
	var out []provider.CustomMetricInfo
	if r.opts.Custom != nil {
		out = r.opts.Custom.ListAllMetrics()
	}
	seen := make(map[provider.CustomMetricInfo]bool, len(out))
	for _, info := range out {
		seen[info] = true
	}
	for _, u := range r.upstreams {
		if !u.cfg.Serves(GroupCustom) {
			continue
		}
		for _, info := range u.customMetrics() {
			if !seen[info] {
				seen[info] = true
				out = append(out, info)
			}
		}
	}
	return out
}

// ListAllExternalMetrics implements provider.ExternalMetricsProvider as
// ListAllMetrics does.
func (r *Router) ListAllExternalMetrics() []provider.ExternalMetricInfo {
	var out []provider.ExternalMetricInfo
	if r.opts.External != nil {
		out = r.opts.External.ListAllExternalMetrics()
	}
	seen := make(map[string]bool, len(out))
	for _, info := range out {
		seen[info.Metric] = true
	}
	for _, u := range r.upstreams {
		if !u.cfg.Serves(GroupExternal) {
			continue
		}
		for _, m := range u.externalMetrics() {
			if !seen[m] {
				seen[m] = true
				out = append(out, provider.ExternalMetricInfo{Metric: m})
			}
		}
	}
	return out
}
