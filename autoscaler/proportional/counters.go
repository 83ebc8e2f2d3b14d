package proportional

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Counters shares node counts among Autoscalers: one Counter per distinct
// node selector, all fed by one node informer, so that a node event costs
// one O(1) update per selector in use, whatever the number of Autoscalers
// and of nodes (BenchmarkCountersUpdate). Safe for concurrent use.
type Counters struct {
	mu         sync.RWMutex
	bySelector map[string]*sharedCounter
}

type sharedCounter struct {
	counter *Counter
	refs    int
}

// NewCounters returns an empty set of counters.
func NewCounters() *Counters {
	return &Counters{bySelector: make(map[string]*sharedCounter)}
}

// Acquire returns the counter of selector (nil: every node), creating it
// from list (the node informer's lister) when no Autoscaler uses that
// selector yet. list is called with event delivery blocked: an event the
// lister already holds and whose Update comes later changes nothing, so no
// event is lost or counted twice. Each Acquire needs a Release.
func (cs *Counters) Acquire(selector labels.Selector, list func() []*corev1.Node) *Counter {
	if selector == nil {
		selector = labels.Everything()
	}
	key := selector.String()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if s, ok := cs.bySelector[key]; ok {
		s.refs++
		return s.counter
	}
	c := NewCounter(selector)
	for _, n := range list() {
		c.Update(n)
	}
	cs.bySelector[key] = &sharedCounter{counter: c, refs: 1}
	return c
}

// Release gives up one Acquire of selector; the counter goes with the last.
func (cs *Counters) Release(selector labels.Selector) {
	if selector == nil {
		selector = labels.Everything()
	}
	key := selector.String()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if s, ok := cs.bySelector[key]; ok {
		if s.refs--; s.refs <= 0 {
			delete(cs.bySelector, key)
		}
	}
}

// Update feeds a node add or update to every counter and returns the
// selectors (as Selector.String gives them) whose size changed: only
// their Autoscalers need evaluating.
func (cs *Counters) Update(node *corev1.Node) []string {
	return cs.each(func(c *Counter) bool { return c.Update(node) })
}

// Delete feeds a node deletion to every counter, like Update.
func (cs *Counters) Delete(name string) []string {
	return cs.each(func(c *Counter) bool { return c.Delete(name) })
}

func (cs *Counters) each(apply func(*Counter) bool) []string {
	cs.mu.RLock()
	defer cs.mu.RUnlock()
	var changed []string
	for key, s := range cs.bySelector {
		if apply(s.counter) {
			changed = append(changed, key)
		}
	}
	return changed
}
