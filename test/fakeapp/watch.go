package fakeapp

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
)

// watchSet holds one pod informer per (namespace, selector).
type watchSet struct {
	client    kubernetes.Interface
	factories map[string]informers.SharedInformerFactory
	views     map[string]*podView
}

func newWatchSet(client kubernetes.Interface) *watchSet {
	return &watchSet{client: client, factories: map[string]informers.SharedInformerFactory{}, views: map[string]*podView{}}
}

// add returns the pod view of namespace/selector, creating its informer once.
func (w *watchSet) add(namespace, selector string) (Pods, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("parse selector %q: %w", selector, err)
	}
	key := namespace + "\x00" + selector
	if v, ok := w.views[key]; ok {
		return v, nil
	}
	f := informers.NewSharedInformerFactoryWithOptions(w.client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	v := &podView{lister: f.Core().V1().Pods().Lister()}
	f.Core().V1().Pods().Informer() // register before Start
	w.factories[key], w.views[key] = f, v
	return v, nil
}

// start runs the informers and waits for their caches until ctx ends.
func (w *watchSet) start(ctx context.Context) error {
	for key, f := range w.factories {
		f.Start(ctx.Done())
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("fakeapp: pod cache %q (%v) did not sync: %w", key, typ, context.Cause(ctx))
			}
		}
	}
	return nil
}

// shutdown stops the informers and waits for their goroutines. The context
// passed to start must be cancelled first.
func (w *watchSet) shutdown() {
	for _, f := range w.factories {
		f.Shutdown()
	}
}

// podView reads one informer's cache.
type podView struct {
	lister listersv1.PodLister
}

// Snapshot implements Pods.
func (v *podView) Snapshot() ([]string, map[string]bool) {
	pods, err := v.lister.List(labels.Everything())
	if err != nil { // the cache lister never fails; be safe anyway
		return nil, map[string]bool{}
	}
	return Classify(pods)
}

// Classify returns the sorted names of the Ready, non-terminating pods and the
// set of all pod names.
func Classify(pods []*corev1.Pod) (ready []string, present map[string]bool) {
	present = make(map[string]bool, len(pods))
	for _, p := range pods {
		present[p.Name] = true
		if IsReady(p) {
			ready = append(ready, p.Name)
		}
	}
	slices.Sort(ready)
	return ready, present
}

// IsReady reports whether the pod is Running, has condition Ready=True and is
// not being deleted.
func IsReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
