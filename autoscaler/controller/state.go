package controller

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// What the controller remembers per key: the history an autoscaler carries
// between evaluations (stateStore) and the resource version of its last
// write (writeTracker).

// stateStore maps queue keys to histories. A history is used by one
// reconcile at a time (the queue never hands a key to two workers), so its
// fields need no lock.
type stateStore struct {
	mu sync.Mutex
	m  map[string]*evaluation.History
}

func newStateStore() *stateStore {
	return &stateStore{m: map[string]*evaluation.History{}}
}

// get returns the history of key, creating an empty one; fresh is true when
// it did (the first evaluation of key by this process).
func (s *stateStore) get(key string) (h *evaluation.History, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok {
		h = &evaluation.History{}
		s.m[key] = h
	}
	return h, !ok
}

// peek returns the history of key without creating it.
func (s *stateStore) peek(key string) (*evaluation.History, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	return h, ok
}

func (s *stateStore) delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

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
