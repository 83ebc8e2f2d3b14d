package objects

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// GenericLister returns the cache of gr's objects as a GenericLister of
// *metav1.PartialObjectMetadata (name, namespace, labels; see strip), for code that
// reads a cache directly, such as metrics-server's metrics.k8s.io storage. Before
// Start it only registers the informer, which Start runs; after, it runs it if it
// is not running. synced reports when its cache is filled.
func (l *CacheLister) GenericLister(gr schema.GroupResource) (lister cache.GenericLister, synced cache.InformerSynced, err error) {
	inf, err := l.informerFor(gr)
	if err != nil {
		return nil, nil, err
	}
	return inf.Lister(), inf.Informer().HasSynced, nil
}
