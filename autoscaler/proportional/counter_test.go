package proportional

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// A random sequence of node events (joins, leaves, cordons, readiness,
// allocatable and label changes) keeps Counter.Size equal to Count over the
// matching nodes, and Update/Delete report exactly the changes of Size.
func TestCounterMatchesCount(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 4))
	selector := labels.SelectorFromSet(labels.Set{"pool": "dns"})
	c := NewCounter(selector)
	current := map[string]*corev1.Node{}
	cpus := []string{"", "1", "1500m", "3920m", "16", "250m", "100n"}
	statuses := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}
	for i := range 5000 {
		name := fmt.Sprintf("node-%d", r.IntN(40))
		before := c.Size()
		var changed bool
		if r.IntN(6) == 0 {
			delete(current, name)
			changed = c.Delete(name)
		} else {
			n := node(cpus[r.IntN(len(cpus))], ready(statuses[r.IntN(len(statuses))]))
			n.Name = name
			n.Spec.Unschedulable = r.IntN(5) == 0
			n.Labels = map[string]string{"pool": []string{"dns", "dns", "dns", "batch"}[r.IntN(4)]}
			current[name] = n
			changed = c.Update(n)
		}
		var matching []*corev1.Node
		for _, n := range current {
			if selector.Matches(labels.Set(n.Labels)) {
				matching = append(matching, n)
			}
		}
		want := Count(matching)
		if got := c.Size(); got != want {
			t.Fatalf("event %d: counter %+v, Count %+v", i, got, want)
		}
		if changed != (want != before) {
			t.Fatalf("event %d: changed %v, but size went %+v -> %+v", i, changed, before, want)
		}
	}
}

func TestCounterNilSelector(t *testing.T) {
	c := NewCounter(nil)
	n := node("2", ready(corev1.ConditionTrue))
	n.Name = "a"
	if !c.Update(n) || c.Update(n) || c.Update(nil) {
		t.Error("first update changes the size, the same state again does not")
	}
	if got := c.Size(); got != (ClusterSize{1, 2, 1, 2}) {
		t.Errorf("got %+v", got)
	}
	if !c.Delete("a") || c.Delete("a") || c.Size() != (ClusterSize{}) {
		t.Error("delete")
	}
}

// BenchmarkCounterUpdate: one node event on a counter of 5,000 nodes, the
// event either a heartbeat (nothing counted changes) or a readiness flip.
func BenchmarkCounterUpdate(b *testing.B) {
	nodes := clusterNodes(5000)
	c := NewCounter(labels.Everything())
	for _, n := range nodes {
		c.Update(n)
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
			c.Update(nodes[i%len(nodes)])
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
			c.Update(set[i%len(nodes)])
			i++
		}
	})
}
