package proportional

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
)

// Counter keeps the ClusterSize of the nodes a selector matches up to date
// one node event at a time, so that a node informer's handlers cost O(1) per
// event instead of a Count over every node (BenchmarkCounterUpdate against
// BenchmarkCount). Its Size always equals Count over the matching nodes it
// was told about: cores are kept as exact quantity sums and rounded up only
// when read. Safe for concurrent use.
type Counter struct {
	selector labels.Selector

	mu          sync.Mutex
	nodes       map[string]share
	all, sched  resource.Quantity
	schedulable int
}

// share is what one node adds to the counts.
type share struct {
	cpu         resource.Quantity
	schedulable bool
}

// NewCounter counts the nodes selector matches (CPA's --nodelabels); a nil
// selector matches every node.
func NewCounter(selector labels.Selector) *Counter {
	if selector == nil {
		selector = labels.Everything()
	}
	return &Counter{selector: selector, nodes: make(map[string]share)}
}

// Update records a node's current state (an informer's add or update, or a
// node in a relist): counted if the selector matches it, forgotten if not.
// It reports whether Size changed; a status heartbeat that changes neither
// readiness, cordoning, labels nor allocatable cpu changes nothing.
func (c *Counter) Update(node *corev1.Node) bool {
	if node == nil {
		return false
	}
	if !c.selector.Matches(labels.Set(node.Labels)) {
		return c.Delete(node.Name)
	}
	s := share{cpu: node.Status.Allocatable[corev1.ResourceCPU], schedulable: Schedulable(node)}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.nodes[node.Name]
	if known && old.schedulable == s.schedulable && old.cpu.Cmp(s.cpu) == 0 {
		return false
	}
	before := c.sizeLocked()
	if known {
		c.remove(old)
	}
	c.nodes[node.Name] = s
	c.all.Add(s.cpu)
	if s.schedulable {
		c.schedulable++
		c.sched.Add(s.cpu)
	}
	return c.sizeLocked() != before
}

// Delete forgets a node (an informer's delete) and reports whether Size
// changed.
func (c *Counter) Delete(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.nodes[name]
	if !known {
		return false
	}
	before := c.sizeLocked()
	c.remove(old)
	delete(c.nodes, name)
	return c.sizeLocked() != before
}

func (c *Counter) remove(s share) {
	c.all.Sub(s.cpu)
	if s.schedulable {
		c.schedulable--
		c.sched.Sub(s.cpu)
	}
}

// Size is Count over the nodes counted.
func (c *Counter) Size() ClusterSize {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sizeLocked()
}

func (c *Counter) sizeLocked() ClusterSize {
	return ClusterSize{
		Nodes:            len(c.nodes),
		Cores:            int(c.all.Value()),
		SchedulableNodes: c.schedulable,
		SchedulableCores: int(c.sched.Value()),
	}
}
