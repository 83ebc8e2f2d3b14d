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
	"slices"
	"strings"

	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

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
