package discovery

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// backendGroups are the query groups of one backend.
type backendGroups struct {
	name   string
	groups []queryGroup
}

// splitByBackend splits groups by backend, backends in order of first appearance.
func splitByBackend(groups []queryGroup) []backendGroups {
	var out []backendGroups
	pos := map[string]int{}
	for _, g := range groups {
		i, ok := pos[g.backend]
		if !ok {
			i = len(out)
			pos[g.backend] = i
			out = append(out, backendGroups{name: g.backend})
		}
		out[i].groups = append(out[i].groups, g)
	}
	return out
}

// backendResult is the outcome of listing one backend.
type backendResult struct {
	reg     *Registry
	err     error
	elapsed time.Duration
}

// collectBackends lists every backend concurrently (one goroutine per backend;
// each backend's Guard bounds its own requests), so a slow or failing backend does
// not hold up the others.
func (d *Discoverer) collectBackends(ctx context.Context, rules []*rules.Rule, backends []backendGroups) []backendResult {
	results := make([]backendResult, len(backends))
	var wg sync.WaitGroup
	for i, b := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := d.opts.Clock.Now()
			reg, err := d.collect(ctx, rules, b.name, b.groups)
			results[i] = backendResult{reg: reg, err: err, elapsed: d.opts.Clock.Since(start)}
		}()
	}
	wg.Wait()
	return results
}

// only returns the entries of r served by rules of backend: what a backend whose
// relist failed keeps serving.
func (r *Registry) only(backend string) *Registry {
	out := &Registry{custom: map[provider.CustomMetricInfo]Target{}, external: map[string]Target{}}
	if r == nil {
		return out
	}
	for k, t := range r.custom {
		if t.Rule.Backend() == backend {
			out.custom[k] = t
		}
	}
	for k, t := range r.external {
		if t.Rule.Backend() == backend {
			out.external[k] = t
		}
	}
	return out
}

// mergeByRule merges the registries of several backends. When rules of different
// backends give the same metric, the rule later in the file wins, as it does among
// the rules of one backend.
func mergeByRule(parts []*Registry) *Registry {
	if len(parts) == 1 {
		return parts[0]
	}
	out := &Registry{custom: map[provider.CustomMetricInfo]Target{}, external: map[string]Target{}}
	for _, p := range parts {
		out.series += p.series
		for k, t := range p.custom {
			if old, ok := out.custom[k]; !ok || old.Rule.Index() < t.Rule.Index() {
				out.custom[k] = t
			}
		}
		for k, t := range p.external {
			if old, ok := out.external[k]; !ok || old.Rule.Index() < t.Rule.Index() {
				out.external[k] = t
			}
		}
	}
	return out
}

// backendLabel is the backend label value of self-metrics and logs.
func backendLabel(name string) string {
	if name == "" {
		return rulefile.DefaultBackend
	}
	return name
}

// orEmpty returns r, or an empty registry for nil.
func (r *Registry) orEmpty() *Registry {
	if r == nil {
		return &Registry{custom: map[provider.CustomMetricInfo]Target{}, external: map[string]Target{}}
	}
	return r
}
