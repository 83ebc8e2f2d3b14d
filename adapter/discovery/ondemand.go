package discovery

import (
	"context"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/naming"
)

// maxTracked bounds the per-name memory of on-demand attempts, so requests for many
// random names cannot grow it without limit.
const maxTracked = 10000

// DiscoverCustom looks for info's metric in Prometheus now, outside the relist
// schedule, and reports whether the registry now serves info. Attempts for the same
// name are spaced by OnDemandInterval and all attempts share a global rate limit, so
// requests for unknown names cannot flood Prometheus.
func (d *Discoverer) DiscoverCustom(ctx context.Context, info provider.CustomMetricInfo) bool {
	d.discover(ctx, naming.Custom, info.Metric)
	_, ok := d.Registry().Custom(info)
	return ok
}

// DiscoverExternal is DiscoverCustom for an external metric.
func (d *Discoverer) DiscoverExternal(ctx context.Context, metric string) bool {
	d.discover(ctx, naming.External, metric)
	_, ok := d.Registry().External(metric)
	return ok
}

func (d *Discoverer) discover(ctx context.Context, kind naming.Kind, metric string) {
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
	if len(d.lastTry) >= maxTracked {
		clear(d.lastTry)
	}
	d.lastTry[key] = now
	return true
}

// discoverMetric lists only the series that could yield metric: first the series
// names each rule's query selects (a small answer), then the series of those names.
func (d *Discoverer) discoverMetric(ctx context.Context, kind naming.Kind, metric string) error {
	d.mu.Lock()
	rules, gen := *d.rules.Load(), d.rulesGen
	d.mu.Unlock()
	since := d.opts.Clock.Now().Add(-d.opts.MaxAge)
	var groups []queryGroup
	for i, r := range rules {
		if r.Kind() != kind {
			continue
		}
		names, err := d.opts.Client.LabelValues(ctx, "__name__", []string{r.SeriesQuery()}, since)
		if err != nil {
			return err
		}
		for _, n := range names {
			if m, ok := r.MetricName(n); !ok || m != metric {
				continue
			}
			if sel, ok := narrowSelector(r.SeriesQuery(), n); ok {
				groups = append(groups, queryGroup{query: sel, rules: []int{i}})
			}
		}
	}
	if len(groups) == 0 {
		return nil
	}
	started := d.opts.Clock.Now()
	add, err := d.collect(ctx, rules, groups)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.rulesGen {
		return nil
	}
	reg := d.reg.Load().merged(add)
	d.reg.Store(reg)
	d.additions = append(d.additions, addition{at: started, reg: add})
	d.metrics.setRegistry(reg)
	return nil
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
