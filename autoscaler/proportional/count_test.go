package proportional

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

type nodeOpt func(*corev1.Node)

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

func ready(status corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: status})
	}
}

func capacity(cpu string) nodeOpt {
	return func(n *corev1.Node) {
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

// node has allocatable cpu (none when cpu is "") and the conditions of a
// kubelet's node, Ready last.
func node(cpu string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("15Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
		},
	}}
	if cpu != "" {
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func TestCount(t *testing.T) {
	up := ready(corev1.ConditionTrue)
	tests := []struct {
		name  string
		nodes []*corev1.Node
		want  ClusterSize
	}{
		{"none", nil, ClusterSize{}},
		{"ready nodes", []*corev1.Node{node("4", up), node("8", up)}, ClusterSize{2, 12, 2, 12}},
		// Summed as quantities, rounded up once: 1.5 + 1.5 = 3, not 2 + 2.
		{"millicores summed exactly", []*corev1.Node{node("1500m", up), node("1500m", up)}, ClusterSize{2, 3, 2, 3}},
		// Each sum rounds up on its own: all = ceil(3.5), schedulable = ceil(1.5).
		{"each sum rounded up", []*corev1.Node{node("1500m", up), node("2", up, cordoned)}, ClusterSize{2, 4, 1, 2}},
		{"nanocores", []*corev1.Node{node("100n", up)}, ClusterSize{1, 1, 1, 1}},
		{"cordoned", []*corev1.Node{node("4", up, cordoned), node("4", up)}, ClusterSize{2, 8, 1, 4}},
		{"not ready", []*corev1.Node{node("4", ready(corev1.ConditionFalse)), node("4", up)}, ClusterSize{2, 8, 1, 4}},
		{"ready unknown", []*corev1.Node{node("4", ready(corev1.ConditionUnknown)), node("4", up)}, ClusterSize{2, 8, 1, 4}},
		{"no ready condition", []*corev1.Node{node("4"), node("4", up)}, ClusterSize{2, 8, 1, 4}},
		// Any Ready=True condition counts, as in CPA.
		{"duplicate ready conditions", []*corev1.Node{node("4", ready(corev1.ConditionFalse), up)}, ClusterSize{1, 4, 1, 4}},
		// Allocatable, not capacity; no allocatable cpu adds nothing.
		{"capacity ignored", []*corev1.Node{node("3920m", up, capacity("4")), node("", up, capacity("8"))}, ClusterSize{2, 4, 2, 4}},
		{"nil skipped", []*corev1.Node{nil, node("2", up)}, ClusterSize{1, 2, 1, 2}},
	}
	for _, tt := range tests {
		if got := Count(tt.nodes); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// clusterNodes builds n nodes like a real cluster's: mostly 3920m or 16 cores
// allocatable, 1 in 20 cordoned, 1 in 50 NotReady.
func clusterNodes(n int) []*corev1.Node {
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		cpu := "3920m"
		if i%3 == 0 {
			cpu = "16"
		}
		status := corev1.ConditionTrue
		if i%50 == 7 {
			status = corev1.ConditionFalse
		}
		nodes[i] = node(cpu, ready(status), capacity("16"))
		nodes[i].Name = fmt.Sprintf("node-%05d", i)
		nodes[i].Spec.Unschedulable = i%20 == 3
	}
	return nodes
}

func TestCountCluster(t *testing.T) {
	size := Count(clusterNodes(5000))
	// By construction: 1667 nodes of 16 cores, 3333 of 3.92.
	if size.Nodes != 5000 || size.Cores != 1667*16+13066 {
		t.Errorf("all: %+v", size)
	}
	if size.SchedulableNodes >= size.Nodes || size.SchedulableCores >= size.Cores || size.SchedulableNodes < 4600 {
		t.Errorf("schedulable: %+v", size)
	}
}

// BenchmarkCount: one count of a 5,000-node cluster, what the controller
// does once per node change (recorded in docs/benchmarks.md).
func BenchmarkCount(b *testing.B) {
	for _, n := range []int{100, 5000} {
		nodes := clusterNodes(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Count(nodes)
			}
		})
	}
}

func BenchmarkExplain(b *testing.B) {
	size := ClusterSize{Nodes: 5000, Cores: 40000, SchedulableNodes: 4900, SchedulableCores: 39000}
	unsorted := readmeLadder
	unsorted.CoresToReplicas = [][]int{{4096, 15}, {1, 1}, {2048, 10}, {64, 3}, {1024, 7}, {512, 5}}
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"linear", Params{Linear: &Linear{CoresPerReplica: 256, NodesPerReplica: 16, PreventSinglePointFailure: true}}},
		{"ladder sorted", Params{Ladder: &readmeLadder}},
		{"ladder unsorted", Params{Ladder: &unsorted}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Explain(c.p, size)
			}
		})
	}
}
