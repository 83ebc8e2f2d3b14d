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
type selectorTracker struct {
	mu        sync.RWMutex
	selectors map[string]map[string]labels.Selector // namespace → key → selector
}

func newSelectorTracker() *selectorTracker {
	return &selectorTracker{selectors: map[string]map[string]labels.Selector{}}
}

// register adds key with a selector that matches nothing, if absent.
func (t *selectorTracker) register(key string) {
	ns := namespaceOf(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.selectors[ns] == nil {
		t.selectors[ns] = map[string]labels.Selector{}
	}
	if _, ok := t.selectors[ns][key]; !ok {
		t.selectors[ns][key] = labels.Nothing()
	}
}

// update sets key's selector if key is registered; false means the object
// was deleted meanwhile.
func (t *selectorTracker) update(key string, s labels.Selector) bool {
	ns := namespaceOf(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.selectors[ns][key]; !ok {
		return false
	}
	t.selectors[ns][key] = s
	return true
}

func (t *selectorTracker) remove(key string) {
	ns := namespaceOf(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.selectors[ns], key)
	if len(t.selectors[ns]) == 0 {
		delete(t.selectors, ns)
	}
}

// matching returns, sorted, up to limit keys of namespace whose selectors
// match at least one of pods.
func (t *selectorTracker) matching(namespace string, pods []*corev1.Pod, limit int) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sets := map[string]labels.Set{}
	for _, p := range pods {
		set := labels.Set(p.Labels)
		sets[set.String()] = set
	}
	var out []string
	for key, sel := range t.selectors[namespace] {
		for _, set := range sets {
			if sel.Matches(set) {
				out = append(out, key)
				break
			}
		}
		if len(out) >= limit {
			break
		}
	}
	slices.Sort(out)
	return out
}

func namespaceOf(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}
