package adaptertest

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// ResourceRules is kube-prometheus' shape of resourceRules over the series
// of the kubelet's /metrics/resource (cAdvisor's names), a top-level key of
// a rule file: CPU as the rate of the counters over window, memory as the
// working set.
func ResourceRules(window time.Duration) string {
	return fmt.Sprintf(`
resourceRules:
  cpu:
    containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,container!="",pod!=""}[%[1]s]))'
    nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>}[%[1]s]))'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  memory:
    containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,container!="",pod!=""})'
    nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>})'
    resources:
      overrides:
        node: {resource: node}
        namespace: {resource: namespace}
        pod: {resource: pod}
    containerLabel: container
  window: %[1]s
`, model.Duration(window))
}
