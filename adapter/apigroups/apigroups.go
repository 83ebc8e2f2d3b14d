// Package apigroups decides which metrics API groups one adapter process serves,
// from --resource-metrics and the rule file read at start. The adapter's server
// builds its groups from this decision; a chart or harness registering
// APIServices asks it the same question.
package apigroups

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// Values of --resource-metrics: when the adapter serves metrics.k8s.io.
const (
	// ResourceMetricsAuto serves metrics.k8s.io when the rule file has resourceRules at
	// start (prometheus-adapter's behaviour); adding them later needs a restart.
	ResourceMetricsAuto = "auto"
	// ResourceMetricsEnabled always serves metrics.k8s.io; without resourceRules it
	// answers empty lists and NotFound until a reload adds them.
	ResourceMetricsEnabled = "enabled"
	// ResourceMetricsDisabled never serves metrics.k8s.io; resourceRules are ignored.
	ResourceMetricsDisabled = "disabled"
)

// ResourceMetricsModes are the values --resource-metrics accepts.
var ResourceMetricsModes = []string{ResourceMetricsAuto, ResourceMetricsEnabled, ResourceMetricsDisabled}

// Served are the API groups one adapter process serves. They are fixed for the
// life of the process: a group cannot be added to a running generic API server.
type Served struct {
	// Custom (custom.metrics.k8s.io v1beta1, v1beta2) and External
	// (external.metrics.k8s.io v1beta1) are always served, whatever the rule file
	// holds: without rules of their kind they list no resources and answer NotFound
	// for every metric, and the first rule a reload adds is served at once. An
	// APIService registered for them is therefore Available from the start.
	Custom, External bool
	// Resource is metrics.k8s.io (v1 and v1beta1, the same answers at both), as
	// --resource-metrics says.
	Resource bool
}

// Select decides which groups an adapter started with
// --resource-metrics=resourceMode and the rule set serves.
func Select(resourceMode string, set *rules.Set) Served {
	apis := Served{Custom: true, External: true}
	switch resourceMode {
	case ResourceMetricsEnabled:
		apis.Resource = true
	case ResourceMetricsAuto:
		apis.Resource = set.Resource != nil
	}
	return apis
}

// GroupVersions returns the API group versions served, for an APIService each
// (what a chart or harness may register and expect to become Available).
func (a Served) GroupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	if a.Custom {
		out = append(out, schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta1"}, schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta2"})
	}
	if a.External {
		out = append(out, schema.GroupVersion{Group: "external.metrics.k8s.io", Version: "v1beta1"})
	}
	if a.Resource {
		out = append(out, schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1"}, schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"})
	}
	return out
}
