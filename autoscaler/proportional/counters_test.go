package proportional

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestCounters(t *testing.T) {
	nodes := clusterNodes(30)
	for i, n := range nodes {
		n.Labels = map[string]string{"pool": fmt.Sprint("p", i%3)}
	}
	list := func() []*corev1.Node { return nodes }
	cs := NewCounters()
	p0 := labels.SelectorFromSet(labels.Set{"pool": "p0"})
	all := cs.Acquire(nil, list)
	a := cs.Acquire(p0, list)
	if b := cs.Acquire(labels.SelectorFromSet(labels.Set{"pool": "p0"}), list); b != a {
		t.Fatal("the same selector must share one counter")
	}
	if got, want := a.Size(), Count(slices.DeleteFunc(slices.Clone(nodes), func(n *corev1.Node) bool { return n.Labels["pool"] != "p0" })); got != want {
		t.Errorf("p0: %+v, want %+v", got, want)
	}
	if all.Size() != Count(nodes) {
		t.Errorf("all: %+v", all.Size())
	}
	// A p1 node cordoned: only the all-nodes counter changes.
	n := nodes[1].DeepCopy()
	n.Spec.Unschedulable = !n.Spec.Unschedulable
	if got := cs.Update(n); !slices.Equal(got, []string{""}) {
		t.Errorf("changed %q, want only the all-nodes selector", got)
	}
	if got := cs.Update(n); len(got) != 0 {
		t.Errorf("the same state again changed %q", got)
	}
	got := cs.Delete(nodes[0].Name)
	slices.Sort(got)
	if !slices.Equal(got, []string{"", "pool=p0"}) {
		t.Errorf("delete of a p0 node changed %q", got)
	}
	cs.Release(p0)
	cs.Release(p0)
	cs.Release(nil)
	if got := cs.Update(nodes[0]); len(got) != 0 {
		t.Errorf("released counters still fed: %q", got)
	}
}

// BenchmarkCountersUpdate: one node event with 100 Autoscalers on 5,000
// nodes, each Autoscaler counting its own node pool (100 selectors, the
// worst case: Autoscalers sharing a selector share its counter).
func BenchmarkCountersUpdate(b *testing.B) {
	nodes := clusterNodes(5000)
	for i, n := range nodes {
		n.Labels = map[string]string{"pool": fmt.Sprint("p", i%100)}
	}
	cs := NewCounters()
	for i := range 100 {
		cs.Acquire(labels.SelectorFromSet(labels.Set{"pool": fmt.Sprint("p", i)}), func() []*corev1.Node { return nodes })
	}
	flipped := make([]*corev1.Node, len(nodes))
	for i, n := range nodes {
		flipped[i] = n.DeepCopy()
		flipped[i].Spec.Unschedulable = !n.Spec.Unschedulable
	}
	b.Run("heartbeat", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			cs.Update(nodes[i%len(nodes)])
			i++
		}
	})
	b.Run("cordon flip", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			set := nodes
			if (i/len(nodes))%2 == 0 {
				set = flipped
			}
			cs.Update(set[i%len(nodes)])
			i++
		}
	})
}
