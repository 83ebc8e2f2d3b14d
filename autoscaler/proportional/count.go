package proportional

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Count counts nodes and cores exactly as CPA v1.10.x does: every node
// given (the caller selects them, as CPA's --nodelabels does) counts in
// Nodes and Cores; a node counts as schedulable when spec.unschedulable is
// false and it has a Ready condition with status True. Cores are the nodes'
// status.allocatable cpu (not capacity; a node without it adds 0), summed
// exactly as quantities and rounded up once per sum (nodes of 1500m and
// 1500m give 3 cores, not 4). Nil entries are skipped.
//
// It allocates nothing for the usual quantities (integers and millicores)
// and is linear in the number of nodes: see BenchmarkCount.
func Count(nodes []*corev1.Node) ClusterSize {
	var all, schedulable resource.Quantity
	var size ClusterSize
	for _, node := range nodes {
		if node == nil {
			continue
		}
		size.Nodes++
		cpu := node.Status.Allocatable[corev1.ResourceCPU]
		all.Add(cpu)
		if Schedulable(node) {
			size.SchedulableNodes++
			schedulable.Add(cpu)
		}
	}
	size.Cores = int(all.Value())
	size.SchedulableCores = int(schedulable.Value())
	return size
}

// Schedulable is CPA's test of a node: not cordoned (spec.unschedulable
// false) and Ready (a Ready condition with status True; NotReady and Unknown
// nodes are not schedulable since CPA v1.10.1).
func Schedulable(node *corev1.Node) bool {
	if node.Spec.Unschedulable {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
