package upstream

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// maxShadowedLogged bounds the names a conflict warning quotes.
const maxShadowedLogged = 10

// Run discovers every upstream's metrics at once, then every interval, until
// ctx is done. Upstreams are discovered side by side, each within its own
// timeout; after each round the names an upstream lists that Ebbflow or an
// earlier upstream serves are counted (shadowed_metrics) and, when they
// change, logged as a warning.
func (r *Router) Run(ctx context.Context, interval time.Duration) {
	last := map[string]int{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.Discover(ctx)
		r.checkConflicts(ctx, last)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Discover runs one discovery of every upstream, side by side, and returns
// when all are done. Failures are logged and counted by each upstream.
func (r *Router) Discover(ctx context.Context) {
	var wg sync.WaitGroup
	for _, u := range r.upstreams {
		wg.Go(func() { _ = u.Discover(ctx) })
	}
	wg.Wait()
}

// Shadowed is what one upstream lists that another source answers instead.
type Shadowed struct {
	Upstream string
	Group    string
	// Metrics are the names shadowed (RESOURCE/METRIC for custom metrics).
	Metrics []string
}

// Conflicts lists, per upstream and group, the metrics it lists that Ebbflow's
// own rules or an earlier upstream serve: the winner answers them.
func (r *Router) Conflicts() []Shadowed {
	var out []Shadowed
	for i, u := range r.upstreams {
		earlier := r.upstreams[:i]
		if u.cfg.Serves(GroupCustom) {
			s := Shadowed{Upstream: u.cfg.Name, Group: GroupCustom}
			for _, info := range u.customMetrics() {
				if r.customShadowed(info, earlier) {
					s.Metrics = append(s.Metrics, info.GroupResource.String()+"/"+info.Metric)
				}
			}
			out = append(out, s)
		}
		if u.cfg.Serves(GroupExternal) {
			s := Shadowed{Upstream: u.cfg.Name, Group: GroupExternal}
			for _, m := range u.externalMetrics() {
				if r.externalShadowed(m, earlier) {
					s.Metrics = append(s.Metrics, m)
				}
			}
			out = append(out, s)
		}
	}
	return out
}

func (r *Router) customShadowed(info provider.CustomMetricInfo, earlier []*Upstream) bool {
	if r.opts.Custom != nil && r.opts.Served.ServesCustom(info) {
		return true
	}
	for _, e := range earlier {
		if e.cfg.Serves(GroupCustom) && e.ListsCustom(info) {
			return true
		}
	}
	return false
}

func (r *Router) externalShadowed(metric string, earlier []*Upstream) bool {
	if r.opts.External != nil && r.opts.Served.ServesExternal(metric) {
		return true
	}
	for _, e := range earlier {
		if e.cfg.Serves(GroupExternal) && e.ListsExternal(metric) {
			return true
		}
	}
	return false
}

// checkConflicts sets shadowed_metrics and logs a warning for each upstream
// and group whose count changed since last (which it updates).
func (r *Router) checkConflicts(ctx context.Context, last map[string]int) {
	logger := klog.FromContext(ctx)
	for _, s := range r.Conflicts() {
		r.metrics.shadowed.WithLabelValues(s.Upstream, s.Group).Set(float64(len(s.Metrics)))
		key := s.Upstream + "/" + s.Group
		if last[key] == len(s.Metrics) {
			continue
		}
		last[key] = len(s.Metrics)
		if len(s.Metrics) == 0 {
			logger.Info("Upstream metrics no longer shadowed", "upstream", s.Upstream, "group", s.Group)
			continue
		}
		quoted := s.Metrics[:min(len(s.Metrics), maxShadowedLogged)]
		logger.Info("Warning: metrics an upstream lists are served by Ebbflow's own rules or an earlier upstream, which answer them",
			"upstream", s.Upstream, "group", s.Group, "shadowed", len(s.Metrics), "metrics", quoted)
	}
}
