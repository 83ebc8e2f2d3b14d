package resourcemetrics

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/metrics/pkg/apis/metrics"
)

// usageRow is one metrics object as a table shows it.
type usageRow struct {
	name   string
	usage  corev1.ResourceList
	window metav1.Duration
	object runtime.Object
}

// usageTable builds the table kubectl get prints for metrics objects: a row
// per object with its name, its usage of each resource the first object
// reports (in name order, quantities as strings, a resource the object lacks
// as 0) and its window. No objects: no columns and no rows.
func usageTable(rows []usageRow) *metav1.Table {
	table := &metav1.Table{}
	if len(rows) == 0 {
		return table
	}
	var resources []string
	for r := range rows[0].usage {
		resources = append(resources, string(r))
	}
	slices.Sort(resources)
	table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the resource"})
	for _, r := range resources {
		table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: r, Type: "string", Format: "quantity"})
	}
	table.ColumnDefinitions = append(table.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Window", Type: "string", Format: "duration"})
	for _, row := range rows {
		cells := make([]any, 0, len(resources)+2)
		cells = append(cells, row.name)
		for _, r := range resources {
			q := row.usage[corev1.ResourceName(r)]
			cells = append(cells, q.String())
		}
		cells = append(cells, row.window.Duration.String())
		table.Rows = append(table.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: row.object}})
	}
	return table
}

// podTable is usageTable of pods, each pod's usage summed over its containers.
func podTable(pods []metrics.PodMetrics, resourceVersion, cont string) *metav1.Table {
	rows := make([]usageRow, len(pods))
	for i := range pods {
		rows[i] = usageRow{name: pods[i].Name, usage: podUsage(pods[i]), window: pods[i].Window, object: &pods[i]}
	}
	t := usageTable(rows)
	t.ResourceVersion, t.Continue = resourceVersion, cont
	return t
}

// podUsage sums a pod's containers' usage per resource.
func podUsage(pod metrics.PodMetrics) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, c := range pod.Containers {
		for r, q := range c.Usage {
			total := sum[r]
			total.Add(q)
			sum[r] = total
		}
	}
	return sum
}

// nodeTable is usageTable of nodes.
func nodeTable(nodes []metrics.NodeMetrics, resourceVersion, cont string) *metav1.Table {
	rows := make([]usageRow, len(nodes))
	for i := range nodes {
		rows[i] = usageRow{name: nodes[i].Name, usage: nodes[i].Usage, window: nodes[i].Window, object: &nodes[i]}
	}
	t := usageTable(rows)
	t.ResourceVersion, t.Continue = resourceVersion, cont
	return t
}
