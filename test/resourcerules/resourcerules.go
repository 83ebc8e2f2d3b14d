// Package resourcerules writes prometheus-adapter's resource rules (the
// rule file's resourceRules, the chart's rules.resource) over the series of
// the kubelet's /metrics/resource (cAdvisor's names), for the harnesses
// that serve metrics.k8s.io: CPU as the rate of the counters over a window,
// memory as the working set.
package resourcerules

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Rules is the YAML mapping of cpu, memory and window, each line indented
// by indent spaces (for the key it goes under). container and node are
// label matchers added to every container and node selector
// (`container!="",pod!=""`, `metrics_path="/metrics/resource"`; node may
// be empty).
func Rules(window time.Duration, indent int, container, node string) string {
	if node != "" {
		node = "," + node
	}
	rules := fmt.Sprintf(`cpu:
  containerQuery: 'sum by (<<.GroupBy>>) (rate(container_cpu_usage_seconds_total{<<.LabelMatchers>>,%[2]s}[%[1]s]))'
  nodeQuery: 'sum by (<<.GroupBy>>) (rate(node_cpu_usage_seconds_total{<<.LabelMatchers>>%[3]s}[%[1]s]))'
  resources: {overrides: {node: {resource: node}, namespace: {resource: namespace}, pod: {resource: pod}}}
  containerLabel: container
memory:
  containerQuery: 'sum by (<<.GroupBy>>) (container_memory_working_set_bytes{<<.LabelMatchers>>,%[2]s})'
  nodeQuery: 'sum by (<<.GroupBy>>) (node_memory_working_set_bytes{<<.LabelMatchers>>%[3]s})'
  resources: {overrides: {node: {resource: node}, namespace: {resource: namespace}, pod: {resource: pod}}}
  containerLabel: container
window: %[1]s
`, model.Duration(window), container, node)
	pad := strings.Repeat(" ", indent)
	var b strings.Builder
	for line := range strings.Lines(rules) {
		b.WriteString(pad + line)
	}
	return b.String()
}
