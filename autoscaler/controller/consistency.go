package controller

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// writeTracker remembers the resource version of the controller's last
// status write per key, so that a reconcile never starts from a cache older
// than that write (it would decide from a stale status and write again), as
// upstream's consistency store does (StaleControllerConsistencyHPA, on by
// default in v1.37).
type writeTracker struct {
	mu sync.Mutex
	rv map[string]string
}

func newWriteTracker() *writeTracker {
	return &writeTracker{rv: map[string]string{}}
}

// wrote records a write that produced resource version rv.
func (w *writeTracker) wrote(key, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.rv[key]; ok {
		if cmp, err := resourceversion.CompareResourceVersion(prev, rv); err == nil && cmp >= 0 {
			return
		}
	}
	w.rv[key] = rv
}

// ensureSeen returns an error while the cached object (at resource version
// cached) is older than the last write; once it is not, the record is
// dropped. Versions that cannot be compared never block.
func (w *writeTracker) ensureSeen(key, cached string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.rv[key]
	if !ok {
		return nil
	}
	if cmp, err := resourceversion.CompareResourceVersion(written, cached); err == nil && cmp > 0 {
		return fmt.Errorf("read version %s of %s is not as new as written version %s", cached, key, written)
	}
	delete(w.rv, key)
	return nil
}

func (w *writeTracker) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}
