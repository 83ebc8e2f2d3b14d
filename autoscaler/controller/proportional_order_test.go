package controller

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// listHookInformer is a node informer whose store runs afterList once,
// after the first List has taken its snapshot: an event the informer
// stores right after the controller listed the nodes.
type listHookInformer struct {
	cache.SharedIndexInformer
	store *listHookStore
}

func (i listHookInformer) GetStore() cache.Store { return i.store }

type listHookStore struct {
	cache.Store
	lists     int
	afterList func()
}

func (s *listHookStore) List() []any {
	out := s.Store.List()
	s.lists++
	if f := s.afterList; f != nil {
		s.afterList = nil
		f()
	}
	return out
}

// A node that joins while the first evaluation reads the counts is never
// lost: either that evaluation counts it, or the node event evaluates the
// Autoscaler again at once. (The controller used to read the counts before
// recording what the Autoscaler depends on: an event in between found no
// dependant, the counts were rebuilt from a store that already held the
// node, so its Update changed nothing, and the Autoscaler kept the old
// count until the next sync period.) The nodes are listed once.
func TestProportionalEventDuringFirstEvaluation(t *testing.T) {
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}})
	a.Spec.Behavior = immediate()
	f := newFixture(t)
	f.target("dns", 1, 1)
	nodes := f.factory.Core().V1().Nodes().Informer()
	for _, n := range []string{"a", "b"} {
		if err := nodes.GetIndexer().Add(node(n, "1", true, false)); err != nil {
			t.Fatal(err)
		}
	}
	joined := node("c", "1", true, false)
	store := &listHookStore{Store: nodes.GetStore(), afterList: func() {
		if err := nodes.GetIndexer().Add(joined); err != nil {
			t.Fatal(err)
		}
	}}
	f.deps = func(d *Deps) {
		d.Cluster = seededCluster(f, listHookInformer{SharedIndexInformer: nodes, store: store})
	}
	l := newAutoscalerLoop(f, a)
	got := l.step()
	// The informer delivers the stored node's event after storing it.
	w := f.ctrl.cluster.built()
	w.nodeChanged(w.counters.Update, joined)
	if !slices.Equal(got, []int32{3}) && f.ctrl.queue.Len() == 0 {
		t.Errorf("scale writes %v and nothing queued: the node that joined during the evaluation is lost until the next sync", got)
	}
	if store.lists != 1 {
		t.Errorf("nodes listed %d times for one selector, want 1", store.lists)
	}
	if f.ctrl.queue.Len() > 0 {
		f.clock.Step(1)
		if got := l.step(); !slices.Equal(got, []int32{3}) {
			t.Errorf("re-evaluation: scale writes %v, want [3]", got)
		}
	}
}
