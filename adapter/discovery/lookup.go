// Package discovery finds which metrics exist by listing series in Prometheus and
// keeps the result as an immutable Registry that requests read without locks. A
// request asks it one question (LookupCustom, LookupExternal in lookup.go): the
// metric name checked, the resource normalised, the registry read, an on-demand
// discovery of that one name on a miss, and a typed 404 when nothing serves it.
//
// Memory does not grow with the number of series: only the distinct sets of label
// names seen per (rule, series name) are kept, never label values.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// externalResource names external metrics in not-found errors.
var externalResource = schema.GroupResource{Group: "external.metrics.k8s.io"}

// Registry returns the current snapshot; never nil after New.
func (d *Discoverer) Registry() *Registry {
	return d.reg.Load()
}

// LookupCustom is the one question a custom-metrics request asks of discovery:
// which rule and series serve info. It normalises the resource (the returned info
// is the normalised one) and looks the metric up; when it is not registered yet it
// checks the name (a registered name is valid: the check is the miss's), runs an
// on-demand discovery and looks again. A metric nothing serves is
// custom-metrics-apiserver's typed 404 (a name no rule can produce is shortened in
// it, so a huge one is not echoed back).
func (d *Discoverer) LookupCustom(ctx context.Context, info provider.CustomMetricInfo) (provider.CustomMetricInfo, Target, error) {
	normalized, err := d.opts.Scope.Normalize(info)
	if err == nil {
		if t, ok := d.Registry().Custom(normalized); ok {
			return normalized, t, nil
		}
	}
	if !d.validName(info.Metric) {
		return info, Target{}, impossibleMetric(info.GroupResource, info.Metric)
	}
	if err != nil {
		return info, Target{}, provider.NewMetricNotFoundError(info.GroupResource, info.Metric)
	}
	d.discover(ctx, rules.Custom, normalized.Metric)
	if t, ok := d.Registry().Custom(normalized); ok {
		return normalized, t, nil
	}
	return normalized, Target{}, provider.NewMetricNotFoundError(normalized.GroupResource, normalized.Metric)
}

// LookupExternal is LookupCustom for an external metric (nothing to normalise).
func (d *Discoverer) LookupExternal(ctx context.Context, metric string) (Target, error) {
	if t, ok := d.Registry().External(metric); ok {
		return t, nil
	}
	if !d.validName(metric) {
		return Target{}, impossibleMetric(externalResource, metric)
	}
	d.discover(ctx, rules.External, metric)
	if t, ok := d.Registry().External(metric); ok {
		return t, nil
	}
	return Target{}, provider.NewMetricNotFoundError(externalResource, metric)
}

// CustomMetrics lists the custom metrics served now (Registry().CustomMetrics()).
func (d *Discoverer) CustomMetrics() []provider.CustomMetricInfo {
	return d.Registry().CustomMetrics()
}

// ExternalMetrics lists the external metrics served now.
func (d *Discoverer) ExternalMetrics() []provider.ExternalMetricInfo {
	return d.Registry().ExternalMetrics()
}

// impossibleMetric is the 404 for a name no rule can produce (too long, or bytes no
// metric name holds); the name is shortened so a huge one is not echoed back.
func impossibleMetric(gr schema.GroupResource, metric string) error {
	const keep = 64
	if len(metric) > keep {
		metric = strings.ToValidUTF8(metric[:keep], "") + "..."
	}
	return provider.NewMetricNotFoundError(gr, metric)
}

// Scoper is what discovery needs to know of the cluster's resources.
type Scoper interface {
	// Namespaced reports whether gr is namespace-scoped; unknown resources are
	// reported as namespaced, the common case.
	Namespaced(gr schema.GroupResource) bool
	// Normalize returns info with its resource as the registry keys it (plural,
	// in its group); an error when the resource is unknown.
	Normalize(info provider.CustomMetricInfo) (provider.CustomMetricInfo, error)
}

// MapperScope answers Scoper from a RESTMapper, so cluster-scoped resources (nodes,
// namespaces, persistentvolumes, and any cluster-scoped CRD) are served without a
// namespace, whatever labels their series carry.
type MapperScope struct {
	Mapper meta.RESTMapper
}

var _ Scoper = MapperScope{}

// Namespaced implements Scoper.
func (s MapperScope) Namespaced(gr schema.GroupResource) bool {
	gvk, err := s.Mapper.KindFor(gr.WithVersion(""))
	if err != nil {
		return true
	}
	mapping, err := s.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return true
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace
}

// Normalize implements Scoper as custom-metrics-apiserver does.
func (s MapperScope) Normalize(info provider.CustomMetricInfo) (provider.CustomMetricInfo, error) {
	normalized, _, err := info.Normalized(s.Mapper)
	return normalized, err
}

// maxTracked and maxTrackedBytes bound the memory of on-demand attempts (entries and
// bytes of their keys), so requests for many random names cannot grow it without
// limit. Names are at most rules.MaxMetricNameLength bytes, and names no rule could
// produce are never remembered.
const (
	maxTracked      = 10000
	maxTrackedBytes = 1 << 20
)

// validName reports whether metric may be an API metric name (rules.CheckMetricName),
// counting the names refused.
func (d *Discoverer) validName(metric string) bool {
	if rules.CheckMetricName(metric) != nil {
		d.metrics.onDemand.WithLabelValues("invalid_name").Inc()
		return false
	}
	return true
}

// discover runs one on-demand discovery of metric, whose name has been checked,
// unless no rule could name it (no work, nothing remembered) or the rate limits
// say no.
func (d *Discoverer) discover(ctx context.Context, kind rules.Kind, metric string) {
	groups := candidates(*d.rules.Load(), kind, metric)
	if len(groups) == 0 {
		d.metrics.onDemand.WithLabelValues("no_rule").Inc()
		return
	}
	key := strconv.Itoa(int(kind)) + "/" + metric
	ch := d.onDemandSF.DoChan(key, func() (any, error) {
		if !d.allow(key) {
			d.metrics.onDemand.WithLabelValues("rate_limited").Inc()
			return nil, nil
		}
		err := d.discoverMetric(ctx, kind, metric)
		switch {
		case err != nil:
			d.metrics.onDemand.WithLabelValues("error").Inc()
			klog.FromContext(ctx).V(2).Info("On-demand discovery failed", "metric", metric, "err", err)
		default:
			d.metrics.onDemand.WithLabelValues("done").Inc()
		}
		return nil, nil
	})
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// allow reports whether an on-demand discovery for key may run now.
func (d *Discoverer) allow(key string) bool {
	now := d.opts.Clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if last, ok := d.lastTry[key]; ok && now.Sub(last) < d.opts.OnDemandInterval {
		return false
	}
	if !d.limiter.AllowN(now, 1) {
		return false
	}
	if len(d.lastTry) >= maxTracked || d.lastTryBytes+len(key) > maxTrackedBytes {
		clear(d.lastTry)
		d.lastTryBytes = 0
	}
	if _, ok := d.lastTry[key]; !ok {
		d.lastTryBytes += len(key)
	}
	d.lastTry[key] = now
	return true
}

// candidates groups the rules of kind that could name metric by backend and series
// query, so each distinct query is asked once of each backend.
func candidates(rules []*rules.Rule, kind rules.Kind, metric string) []queryGroup {
	var groups []queryGroup
	pos := map[[2]string]int{}
	for i, r := range rules {
		if r.Kind() != kind || !r.CanName(metric) {
			continue
		}
		key := [2]string{r.Backend(), r.SeriesQuery()}
		if j, ok := pos[key]; ok {
			groups[j].rules = append(groups[j].rules, i)
			continue
		}
		pos[key] = len(groups)
		groups = append(groups, queryGroup{backend: r.Backend(), query: r.SeriesQuery(), rules: []int{i}})
	}
	return groups
}

// discoverMetric lists only the series that could yield metric: first the series
// names each distinct query of the rules that could name metric selects (a small
// answer, one call per backend and query), then the series of those names. A
// backend that fails does not stop the others; the error names it.
func (d *Discoverer) discoverMetric(ctx context.Context, kind rules.Kind, metric string) error {
	d.mu.Lock()
	rules, gen := *d.rules.Load(), d.rulesGen
	d.mu.Unlock()
	since := d.opts.Clock.Now().Add(-d.opts.MaxAge)
	var errs []error
	var found []queryGroup
	for _, b := range splitByBackend(candidates(rules, kind, metric)) {
		groups, err := d.narrowed(ctx, rules, b, metric, since)
		if err != nil {
			errs = append(errs, fmt.Errorf("backend %q: %w", backendLabel(b.name), err))
		}
		found = append(found, groups...)
	}
	if len(found) == 0 {
		return errors.Join(errs...)
	}
	started := d.opts.Clock.Now()
	var add *Registry
	for _, b := range splitByBackend(found) {
		reg, err := d.collect(ctx, rules, b.name, b.groups)
		if err != nil {
			errs = append(errs, fmt.Errorf("backend %q: %w", backendLabel(b.name), err))
			continue
		}
		add = mergeByRule([]*Registry{add.orEmpty(), reg})
	}
	if add == nil {
		return errors.Join(errs...)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.rulesGen {
		return errors.Join(errs...)
	}
	reg := d.reg.Load().merged(add)
	d.reg.Store(reg)
	d.additions = append(d.additions, addition{at: started, reg: add})
	d.metrics.setRegistry(reg)
	return errors.Join(errs...)
}

// narrowed asks backend b for the series names its candidate queries select and
// returns, per name that gives metric, a query group narrowed to that name.
func (d *Discoverer) narrowed(ctx context.Context, rules []*rules.Rule, b backendGroups, metric string, since time.Time) ([]queryGroup, error) {
	client, err := d.clients.For(b.name)
	if err != nil {
		return nil, err
	}
	var groups []queryGroup
	pos := map[string]int{}
	for _, c := range b.groups {
		names, err := client.LabelValues(ctx, "__name__", []string{c.query}, since)
		if err != nil {
			return groups, err
		}
		for _, n := range names {
			sel, ok := narrowSelector(c.query, n)
			if !ok {
				continue
			}
			for _, i := range c.rules {
				if m, ok := rules[i].MetricName(n); !ok || m != metric {
					continue
				}
				if j, seen := pos[sel]; seen {
					groups[j].rules = append(groups[j].rules, i)
					continue
				}
				pos[sel] = len(groups)
				groups = append(groups, queryGroup{backend: b.name, query: sel, rules: []int{i}})
			}
		}
	}
	return groups, nil
}

// narrowSelector restricts a series selector to one metric name. It returns false
// when the selector names another metric. Selectors of the form {…} get a
// __name__ matcher prepended; PromQL allows several matchers on one label.
func narrowSelector(selector, name string) (string, bool) {
	sel := strings.TrimSpace(selector)
	quoted := strconv.Quote(name)
	if strings.HasPrefix(sel, "{") {
		rest := strings.TrimSpace(sel[1:])
		if strings.HasPrefix(rest, "}") {
			return "{__name__=" + quoted + "}", true
		}
		return "{__name__=" + quoted + "," + rest, true
	}
	end := 0
	for end < len(sel) && isMetricNameChar(sel[end], end == 0) {
		end++
	}
	if end == 0 || sel[:end] != name {
		return "", false
	}
	return sel, true
}

func isMetricNameChar(c byte, first bool) bool {
	switch {
	case c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}

// Target is what a request needs to build its query: the rule and the series name.
type Target struct {
	Rule   *rules.Rule
	Series string
}

// Registry is an immutable snapshot of discovered metrics. A nil *Registry is empty.
type Registry struct {
	custom   map[provider.CustomMetricInfo]Target
	external map[string]Target
	series   int
}

// Custom returns the target serving info, which must be normalised (plural resource).
func (r *Registry) Custom(info provider.CustomMetricInfo) (Target, bool) {
	if r == nil {
		return Target{}, false
	}
	t, ok := r.custom[info]
	return t, ok
}

// External returns the target serving the external metric name.
func (r *Registry) External(metric string) (Target, bool) {
	if r == nil {
		return Target{}, false
	}
	t, ok := r.external[metric]
	return t, ok
}

// CustomMetrics lists every custom metric, sorted for stable discovery documents.
func (r *Registry) CustomMetrics() []provider.CustomMetricInfo {
	if r == nil {
		return nil
	}
	out := make([]provider.CustomMetricInfo, 0, len(r.custom))
	for info := range r.custom {
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b provider.CustomMetricInfo) int {
		return strings.Compare(a.String(), b.String())
	})
	return out
}

// ExternalMetrics lists every external metric, sorted.
func (r *Registry) ExternalMetrics() []provider.ExternalMetricInfo {
	if r == nil {
		return nil
	}
	out := make([]provider.ExternalMetricInfo, 0, len(r.external))
	for name := range r.external {
		out = append(out, provider.ExternalMetricInfo{Metric: name})
	}
	slices.SortFunc(out, func(a, b provider.ExternalMetricInfo) int { return strings.Compare(a.Metric, b.Metric) })
	return out
}

// Len returns the number of custom and external entries.
func (r *Registry) Len() (custom, external int) {
	if r == nil {
		return 0, 0
	}
	return len(r.custom), len(r.external)
}

// merged returns a new registry holding r's entries overwritten by add's.
func (r *Registry) merged(add *Registry) *Registry {
	out := &Registry{custom: map[provider.CustomMetricInfo]Target{}, external: map[string]Target{}}
	if r != nil {
		out.series = r.series
		for k, v := range r.custom {
			out.custom[k] = v
		}
		for k, v := range r.external {
			out.external[k] = v
		}
	}
	for k, v := range add.custom {
		out.custom[k] = v
	}
	for k, v := range add.external {
		out.external[k] = v
	}
	return out
}
