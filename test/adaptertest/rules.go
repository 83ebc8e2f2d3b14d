package adaptertest

import (
	"time"

	"github.com/ebbflow/ebbflow/test/resourcerules"
)

// ResourceRules is kube-prometheus' shape of resourceRules over the series
// of the kubelet's /metrics/resource (cAdvisor's names), a top-level key of
// a rule file: CPU as the rate of the counters over window, memory as the
// working set.
func ResourceRules(window time.Duration) string {
	return "\nresourceRules:\n" + resourcerules.Rules(window, 2, `container!="",pod!=""`, "")
}
