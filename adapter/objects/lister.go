// Package objects lists the names of Kubernetes objects for `*` metric requests from a
// metadata-only informer cache, instead of a LIST against the API server per request.
package objects

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// Lister lists object names by namespace and label selector.
type Lister interface {
	// Names returns the sorted names of gr's objects in namespace ("" for
	// cluster-scoped resources) whose labels match selector. It may block until the
	// cache for gr is filled, at most until ctx is done.
	Names(ctx context.Context, gr schema.GroupResource, namespace string, selector labels.Selector) ([]string, error)
}

// CacheLister implements Lister over metadata informers, started lazily per resource
// on first use and kept running until the context given to Start is done. Objects are
// stored stripped to name, namespace and labels, so the cache stays small.
type CacheLister struct {
	mapper  meta.RESTMapper
	factory metadatainformer.SharedInformerFactory

	mu        sync.Mutex
	ctx       context.Context
	informers map[schema.GroupVersionResource]informers.GenericInformer
}

var _ Lister = (*CacheLister)(nil)

// NewCacheLister returns a lister reading through client; call Start before Names.
// Nothing runs until Start.
func NewCacheLister(client metadata.Interface, mapper meta.RESTMapper, resync time.Duration) *CacheLister {
	return &CacheLister{
		mapper:    mapper,
		factory:   metadatainformer.NewSharedInformerFactoryWithOptions(client, resync, metadatainformer.WithTransform(strip)),
		informers: map[schema.GroupVersionResource]informers.GenericInformer{},
	}
}

// Start makes the lister usable and starts the informers registered so far (by
// GenericLister); they stop when ctx is done. Warm lists resources whose informers
// start now rather than on first request.
func (l *CacheLister) Start(ctx context.Context, warm ...schema.GroupResource) error {
	l.mu.Lock()
	l.ctx = ctx
	l.mu.Unlock()
	for _, gr := range warm {
		if _, err := l.informerFor(gr); err != nil {
			return err
		}
	}
	l.factory.Start(ctx.Done())
	return nil
}

// Names implements Lister.
func (l *CacheLister) Names(ctx context.Context, gr schema.GroupResource, namespace string, selector labels.Selector) ([]string, error) {
	l.mu.Lock()
	started := l.ctx != nil
	l.mu.Unlock()
	if !started {
		return nil, fmt.Errorf("object lister not started")
	}
	inf, err := l.informerFor(gr)
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return nil, fmt.Errorf("cache of %s not synced: %w", gr, ctx.Err())
	}
	if selector == nil {
		selector = labels.Everything()
	}
	var names []string
	appendName := func(o any) {
		if m, ok := o.(metav1.Object); ok {
			names = append(names, m.GetName())
		}
	}
	indexer := inf.Informer().GetIndexer()
	if namespace == "" {
		err = cache.ListAll(indexer, selector, appendName)
	} else {
		err = cache.ListAllByNamespace(indexer, namespace, selector, appendName)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func (l *CacheLister) informerFor(gr schema.GroupResource) (informers.GenericInformer, error) {
	gvr, err := l.mapper.ResourceFor(gr.WithVersion(""))
	if err != nil {
		return nil, fmt.Errorf("unknown resource %s: %w", gr, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if inf, ok := l.informers[gvr]; ok {
		return inf, nil
	}
	inf := l.factory.ForResource(gvr)
	inf.Informer() // register with the factory before starting it
	l.informers[gvr] = inf
	if l.ctx != nil { // started: run the new informer now
		l.factory.Start(l.ctx.Done())
	}
	return inf, nil
}

// strip keeps only what listing by namespace and labels needs.
func strip(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: m.Name, Namespace: m.Namespace, Labels: m.Labels,
			ResourceVersion: m.ResourceVersion, UID: m.UID,
		},
	}, nil
}
