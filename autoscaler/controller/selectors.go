package controller

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// selectorTracker remembers the pod selector of every known autoscaler so a
// reconcile can tell whether its pods are also targeted by another one, as
// upstream's selector store does. Keys are queue keys.
//
// Which keys match a given label set is cached per namespace until a
// selector of that namespace changes, so that the check costs little in the
// steady state even with thousands of autoscalers in one namespace.
type selectorTracker struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceSelectors
}

type namespaceSelectors struct {
	selectors map[string]labels.Selector
	// matches caches, by label set, the sorted keys whose selectors match.
	matches map[string][]string
}

func newSelectorTracker() *selectorTracker {
	return &selectorTracker{namespaces: map[string]*namespaceSelectors{}}
}

func (t *selectorTracker) namespace(ns string) *namespaceSelectors {
	n, ok := t.namespaces[ns]
	if !ok {
		n = &namespaceSelectors{selectors: map[string]labels.Selector{}, matches: map[string][]string{}}
		t.namespaces[ns] = n
	}
	return n
}

// register adds key with a selector that matches nothing, if absent.
func (t *selectorTracker) register(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.namespace(namespaceOf(key))
	if _, ok := n.selectors[key]; !ok {
		n.selectors[key] = labels.Nothing()
	}
}

// update sets key's selector if key is registered; false means the object
// was deleted meanwhile.
func (t *selectorTracker) update(key string, s labels.Selector) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.namespaces[namespaceOf(key)]
	if !ok {
		return false
	}
	prev, ok := n.selectors[key]
	if !ok {
		return false
	}
	if s == nil {
		s = labels.Nothing()
	}
	if prev.String() != s.String() || prev.Empty() != s.Empty() {
		n.selectors[key] = s
		clear(n.matches)
	}
	return true
}

func (t *selectorTracker) remove(key string) {
	ns := namespaceOf(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.namespaces[ns]
	if !ok {
		return
	}
	if _, ok := n.selectors[key]; ok {
		delete(n.selectors, key)
		clear(n.matches)
	}
	if len(n.selectors) == 0 {
		delete(t.namespaces, ns)
	}
}

// matching returns, sorted, up to limit keys of namespace whose selectors
// match at least one of pods.
func (t *selectorTracker) matching(namespace string, pods []*corev1.Pod, limit int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.namespaces[namespace]
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range pods {
		set := labels.Set(p.Labels)
		for _, key := range n.matchesOf(set) {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
		}
		if len(out) >= limit {
			break
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)]
}

// matchesOf returns the cached sorted keys whose selectors match set.
func (n *namespaceSelectors) matchesOf(set labels.Set) []string {
	id := set.String()
	if keys, ok := n.matches[id]; ok {
		return keys
	}
	keys := []string{}
	for key, sel := range n.selectors {
		if sel.Matches(set) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	n.matches[id] = keys
	return keys
}

func namespaceOf(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}
