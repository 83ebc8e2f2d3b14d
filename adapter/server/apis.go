package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

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

var resourceMetricsModes = []string{ResourceMetricsAuto, ResourceMetricsEnabled, ResourceMetricsDisabled}

// servedAPIs are the API groups one adapter process serves. They are fixed for the
// life of the process: a group cannot be added to a running generic API server.
type servedAPIs struct {
	// Custom (custom.metrics.k8s.io v1beta1, v1beta2) and External
	// (external.metrics.k8s.io v1beta1) are always served, whatever the rule file
	// holds: without rules of their kind they list no resources and answer NotFound
	// for every metric, and the first rule a reload adds is served at once. An
	// APIService registered for them is therefore Available from the start.
	Custom, External bool
	// Resource is metrics.k8s.io, as --resource-metrics says.
	Resource bool
}

// selectAPIs decides which groups to serve from the resource metrics mode and the
// rule file read at start.
func selectAPIs(resourceMode string, set *rules.Set) servedAPIs {
	apis := servedAPIs{Custom: true, External: true}
	switch resourceMode {
	case ResourceMetricsEnabled:
		apis.Resource = true
	case ResourceMetricsAuto:
		apis.Resource = set.Resource != nil
	}
	return apis
}

// ServedGroupVersions returns the API group versions an adapter started with
// --resource-metrics=resourceMode and the rule set serves, for an APIService each
// (what a chart or harness may register and expect to become Available).
func ServedGroupVersions(resourceMode string, set *rules.Set) []schema.GroupVersion {
	return selectAPIs(resourceMode, set).groupVersions()
}

func (a servedAPIs) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	if a.Custom {
		out = append(out, schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta1"}, schema.GroupVersion{Group: "custom.metrics.k8s.io", Version: "v1beta2"})
	}
	if a.External {
		out = append(out, schema.GroupVersion{Group: "external.metrics.k8s.io", Version: "v1beta1"})
	}
	if a.Resource {
		out = append(out, schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"})
	}
	return out
}

// logAPIs logs what the process serves and, when resourceRules cannot be served,
// why.
func logAPIs(logger klog.Logger, apis servedAPIs, resourceMode string, set *rules.Set) {
	var groups []string
	for _, gv := range apis.groupVersions() {
		groups = append(groups, gv.String())
	}
	logger.Info("Serving API groups", "groupVersions", groups, "resourceMetrics", resourceMode)
	custom, external := set.Counts()
	if custom == 0 && external == 0 && set.Resource == nil {
		logger.Info("The rule file has no rules: every metrics API answers without metrics until a reload adds some")
	}
	if set.Resource != nil && !apis.Resource {
		logger.Info("resourceRules ignored: metrics.k8s.io is not served", "flag", fmt.Sprintf("--resource-metrics=%s", resourceMode))
	}
}
