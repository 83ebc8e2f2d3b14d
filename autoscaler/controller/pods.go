package controller

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podLabelIndex indexes pods by "<namespace>/<key>=<value>" for each label,
// so that the pods of one scale target are found without scanning every pod
// of the namespace (a namespace may hold thousands of autoscaled workloads).
const podLabelIndex = "ebbflow.dev/pod-label"

func podLabelKeys(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(p.Labels))
	for k, v := range p.Labels {
		keys = append(keys, labelKey(p.Namespace, k, v))
	}
	return keys, nil
}

func labelKey(namespace, k, v string) string { return namespace + "/" + k + "=" + v }

// podSource lists the pods a selector matches in a namespace.
type podSource struct {
	informer cache.SharedIndexInformer
	lister   corelisters.PodLister
}

// newPodSource adds the label index to a pod informer that has not started.
func newPodSource(informer cache.SharedIndexInformer) (*podSource, error) {
	if err := informer.AddIndexers(cache.Indexers{podLabelIndex: podLabelKeys}); err != nil {
		return nil, fmt.Errorf("add pod label index: %w", err)
	}
	return &podSource{informer: informer, lister: corelisters.NewPodLister(informer.GetIndexer())}, nil
}

// list returns the pods of namespace matching sel. Pods are shared with the
// cache and must not be modified. With an equality requirement in sel only
// the pods carrying that label are examined; otherwise the namespace is
// scanned.
func (s *podSource) list(namespace string, sel labels.Selector) ([]*corev1.Pod, error) {
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		op := r.Operator()
		if (op != selection.Equals && op != selection.DoubleEquals && op != selection.In) || r.Values().Len() != 1 {
			continue
		}
		objs, err := s.informer.GetIndexer().ByIndex(podLabelIndex, labelKey(namespace, r.Key(), r.Values().UnsortedList()[0]))
		if err != nil {
			return nil, err
		}
		out := make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return s.lister.Pods(namespace).List(sel)
}

// selectorTracker remembers the pod selector of every known autoscaler so a
// reconcile can tell whether its pods are also targeted by another one, as
// upstream's selector store does. Keys are queue keys.
//
// Selectors are indexed by one of their equality requirements (k=v): a label
// set can only match selectors indexed under one of its own pairs, plus the
// few selectors without such a requirement, which are always checked. A lookup
// therefore checks a handful of candidates however many autoscalers share the
// namespace, and a selector change updates one index entry.
type selectorTracker struct {
	mu         sync.Mutex
	namespaces map[string]*namespaceSelectors
}

type namespaceSelectors struct {
	selectors map[string]labels.Selector
	entry     map[string]string              // key -> its index entry ("k=v"), "" when scanned
	index     map[string]map[string]struct{} // "k=v" -> keys
	scanned   map[string]struct{}            // keys whose selectors have no equality requirement
}

func newSelectorTracker() *selectorTracker {
	return &selectorTracker{namespaces: map[string]*namespaceSelectors{}}
}

func (t *selectorTracker) namespace(ns string) *namespaceSelectors {
	n, ok := t.namespaces[ns]
	if !ok {
		n = &namespaceSelectors{
			selectors: map[string]labels.Selector{}, entry: map[string]string{},
			index: map[string]map[string]struct{}{}, scanned: map[string]struct{}{},
		}
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
		n.set(key, labels.Nothing())
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
	if _, ok := n.selectors[key]; !ok {
		return false
	}
	if s == nil {
		s = labels.Nothing()
	}
	n.set(key, s)
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
	n.unset(key)
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
		n.eachMatch(set, func(key string) {
			if !seen[key] {
				seen[key] = true
				out = append(out, key)
			}
		})
		if len(out) >= limit {
			break
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)]
}

// set replaces key's selector and its index entry.
func (n *namespaceSelectors) set(key string, s labels.Selector) {
	n.unset(key)
	n.selectors[key] = s
	entry, matchesNothing := indexEntry(s)
	switch {
	case matchesNothing:
		// Never a candidate: nothing to index.
	case entry == "":
		n.scanned[key] = struct{}{}
	default:
		if n.index[entry] == nil {
			n.index[entry] = map[string]struct{}{}
		}
		n.index[entry][key] = struct{}{}
	}
	n.entry[key] = entry
}

// unset forgets key and its index entry.
func (n *namespaceSelectors) unset(key string) {
	if _, ok := n.selectors[key]; !ok {
		return
	}
	if entry := n.entry[key]; entry != "" {
		delete(n.index[entry], key)
		if len(n.index[entry]) == 0 {
			delete(n.index, entry)
		}
	}
	delete(n.scanned, key)
	delete(n.entry, key)
	delete(n.selectors, key)
}

// eachMatch calls fn for every key whose selector matches set, checking only
// the selectors indexed under one of set's pairs and the scanned ones.
func (n *namespaceSelectors) eachMatch(set labels.Set, fn func(key string)) {
	check := func(key string) {
		if n.selectors[key].Matches(set) {
			fn(key)
		}
	}
	for k, v := range set {
		for key := range n.index[k+"="+v] {
			check(key)
		}
	}
	for key := range n.scanned {
		check(key)
	}
}

// indexEntry returns an equality requirement of s as "k=v", "" when s has
// none, and whether s matches nothing at all.
func indexEntry(s labels.Selector) (entry string, matchesNothing bool) {
	reqs, selectable := s.Requirements()
	if !selectable {
		return "", true
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vals := r.Values(); vals.Len() == 1 {
				return r.Key() + "=" + vals.UnsortedList()[0], false
			}
		}
	}
	return "", false
}

func namespaceOf(key string) string {
	_, rest, _ := strings.Cut(key, "/")
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}
