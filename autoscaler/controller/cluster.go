package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// errNoNodeInformer: a ClusterProportional metric on a controller started
// without the node informer.
var errNoNodeInformer = errors.New("the controller does not watch nodes (cluster-proportional metrics are off)")

// ClusterInformers are the informers ClusterProportional metrics read.
type ClusterInformers struct {
	Nodes cache.SharedIndexInformer
	// ConfigMaps may be transformed with ProportionalTransform (nil:
	// configMapRef unsupported).
	ConfigMaps cache.SharedIndexInformer
	// Start starts both; the controller calls it once, after adding its
	// event handlers.
	Start func()
}

// lazyCluster builds the cluster watch when the first object with a
// ClusterProportional metric is evaluated, so that a controller none of
// whose objects has one lists and caches no Node and no ConfigMap.
type lazyCluster struct {
	informers func() (ClusterInformers, error) // nil: off
	enqueue   func(key string)
	// maxWait bounds how long one evaluation waits for the caches to sync
	// (0: as long as its context), so that informers that cannot sync (no
	// list permission on nodes) fail those metrics instead of holding
	// workers.
	maxWait time.Duration

	mu  sync.Mutex
	w   *clusterWatch // nil until built
	err error         // why it could not be built (kept: not transient)
	// synced is set once the caches have synced (they stay so), so that the
	// evaluations after that skip the wait.
	synced atomic.Bool
}

// get returns the watch once its caches have synced, building it and
// starting its informers on the first call. Evaluations calling it while
// the caches sync wait, at most maxWait and until ctx ends.
func (l *lazyCluster) get(ctx context.Context) (*clusterWatch, error) {
	l.mu.Lock()
	if l.w == nil && l.err == nil {
		l.w, l.err = l.build()
	}
	w, err := l.w, l.err
	l.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if l.synced.Load() {
		return w, nil
	}
	if l.maxWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.maxWait)
		defer cancel()
	}
	if !cache.WaitForCacheSync(ctx.Done(), w.synced()...) {
		return nil, errors.New("the node and ConfigMap caches have not synced yet")
	}
	l.synced.Store(true)
	return w, nil
}

func (l *lazyCluster) build() (*clusterWatch, error) {
	if l.informers == nil {
		return nil, errNoNodeInformer
	}
	inf, err := l.informers()
	if err != nil {
		return nil, fmt.Errorf("cluster-proportional informers: %w", err)
	}
	if inf.Nodes == nil {
		return nil, errNoNodeInformer
	}
	w, err := newClusterWatch(inf.Nodes, inf.ConfigMaps, l.enqueue)
	if err != nil {
		return nil, err
	}
	if inf.Start != nil {
		inf.Start()
	}
	return w, nil
}

// built returns the watch, or nil when no evaluation has needed it yet.
func (l *lazyCluster) built() *clusterWatch {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w
}

// clusterWatch feeds ClusterProportional metrics: one node informer shared
// by every Autoscaler, node counts kept per node selector in use (so a node
// event costs one update per selector, and an evaluation reads a count),
// and the CPA ConfigMaps Autoscalers refer to. A node or ConfigMap event
// evaluates the Autoscalers that depend on it at once.
type clusterWatch struct {
	nodes      cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer // nil: configMapRef unsupported
	counters   *proportional.Counters
	enqueue    func(key string)

	mu sync.Mutex
	// users maps a selector (Selector.String) or a ConfigMap ("ns/name") to
	// the queue keys depending on it; uses is the reverse.
	users map[string]map[string]struct{}
	uses  map[string]usage
}

// usage is what one Autoscaler depends on.
type usage struct {
	selectors  []labels.Selector
	configMaps []string
}

// newClusterWatch adds the watch's event handlers to nodes (required) and
// configMaps (optional).
func newClusterWatch(nodes, configMaps cache.SharedIndexInformer, enqueue func(string)) (*clusterWatch, error) {
	w := &clusterWatch{nodes: nodes, configMaps: configMaps, counters: proportional.NewCounters(), enqueue: enqueue,
		users: map[string]map[string]struct{}{}, uses: map[string]usage{}}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.nodeChanged(w.counters.Update, obj) },
		UpdateFunc: func(_, obj any) { w.nodeChanged(w.counters.Update, obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				w.notify("sel:", w.counters.Delete(n.Name))
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("add node event handler: %w", err)
	}
	if configMaps != nil {
		h := func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				w.notify("cm:", []string{m.GetNamespace() + "/" + m.GetName()})
			}
		}
		if _, err := configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: h, UpdateFunc: func(_, obj any) { h(obj) }, DeleteFunc: h,
		}); err != nil {
			return nil, fmt.Errorf("add ConfigMap event handler: %w", err)
		}
	}
	return w, nil
}

func (w *clusterWatch) nodeChanged(update func(*corev1.Node) []string, obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		w.notify("sel:", update(n))
	}
}

// notify evaluates at once the Autoscalers depending on the changed things.
func (w *clusterWatch) notify(prefix string, changed []string) {
	w.mu.Lock()
	var keys []string
	for _, c := range changed {
		for k := range w.users[prefix+c] {
			keys = append(keys, k)
		}
	}
	w.mu.Unlock()
	for _, k := range keys {
		w.enqueue(k)
	}
}

// synced lists the informers to wait for.
func (w *clusterWatch) synced() []cache.InformerSynced {
	out := []cache.InformerSynced{w.nodes.HasSynced}
	if w.configMaps != nil {
		out = append(out, w.configMaps.HasSynced)
	}
	return out
}

// size returns the counts of the nodes selector matches.
func (w *clusterWatch) size(selector labels.Selector) proportional.ClusterSize {
	c := w.counters.Acquire(selector, w.listNodes)
	defer w.counters.Release(selector)
	return c.Size()
}

// use records what key depends on, keeping its counters alive, and releases
// what it no longer uses. New counters are acquired before old ones are
// released, so a counter both use is never rebuilt.
func (w *clusterWatch) use(key string, u usage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range u.selectors {
		w.counters.Acquire(s, w.listNodes)
	}
	w.drop(key)
	for _, s := range u.selectors {
		w.link("sel:"+s.String(), key)
	}
	for _, cm := range u.configMaps {
		w.link("cm:"+cm, key)
	}
	if len(u.selectors)+len(u.configMaps) > 0 {
		w.uses[key] = u
	}
}

// forget releases everything key used.
func (w *clusterWatch) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(key)
}

// drop releases and unlinks what key used.
func (w *clusterWatch) drop(key string) {
	old := w.uses[key]
	for _, s := range old.selectors {
		w.counters.Release(s)
		w.unlink("sel:"+s.String(), key)
	}
	for _, cm := range old.configMaps {
		w.unlink("cm:"+cm, key)
	}
	delete(w.uses, key)
}

func (w *clusterWatch) link(thing, key string) {
	if w.users[thing] == nil {
		w.users[thing] = map[string]struct{}{}
	}
	w.users[thing][key] = struct{}{}
}

func (w *clusterWatch) unlink(thing, key string) {
	delete(w.users[thing], key)
	if len(w.users[thing]) == 0 {
		delete(w.users, thing)
	}
}

func (w *clusterWatch) listNodes() []*corev1.Node {
	objs := w.nodes.GetStore().List()
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

// configMapData returns the data of ConfigMap namespace/name, or a NotFound
// style error.
func (w *clusterWatch) configMapData(namespace, name string) (map[string]string, bool, error) {
	if w.configMaps == nil {
		return nil, false, errors.New("the controller does not watch ConfigMaps (configMapRef is off)")
	}
	obj, exists, err := w.configMaps.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return nil, false, err
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, false, fmt.Errorf("unexpected object %T in the ConfigMap cache", obj)
	}
	return cm.Data, true, nil
}

// ProportionalTransform keeps only what the controller reads of ConfigMaps
// (CPA's keys linear and ladder) in the informer's cache, so that watching
// every ConfigMap of the cluster costs little memory.
func ProportionalTransform(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	slim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name, ResourceVersion: cm.ResourceVersion, UID: cm.UID}}
	for _, k := range []string{proportional.ModeLinear, proportional.ModeLadder} {
		if v, ok := cm.Data[k]; ok {
			if slim.Data == nil {
				slim.Data = map[string]string{}
			}
			slim.Data[k] = v
		}
	}
	// Other keys matter only to tell "exactly one key" apart: keep their
	// names with empty values.
	for k := range cm.Data {
		if _, kept := slim.Data[k]; !kept {
			if slim.Data == nil {
				slim.Data = map[string]string{}
			}
			slim.Data[k] = ""
		}
	}
	return slim, nil
}
