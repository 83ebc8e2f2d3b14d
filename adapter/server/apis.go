package server

import (
	"fmt"

	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// logAPIs logs what the process serves and, when resourceRules cannot be served,
// why.
func logAPIs(logger klog.Logger, apis apigroups.Served, resourceMode string, set *rules.Set) {
	var groups []string
	for _, gv := range apis.GroupVersions() {
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
