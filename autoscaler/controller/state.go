package controller

import (
	"sync"

	"github.com/ebbflow/ebbflow/autoscaler/pipeline"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// history is what an autoscaler carries between evaluations: the
// pipeline's History (what upstream keeps in memory, and the proposal
// extensions' state) and the ClusterProportional parameters. A history is used by one reconcile at a time (the
// queue never hands a key to two workers), so its fields need no lock.
type history struct {
	pipeline.History
	// proportional holds the last good parameters read from each referenced
	// ConfigMap, by "name/key" (so reordering spec.metrics keeps them apart).
	proportional map[string]proportional.Params
}

// stateStore maps queue keys to histories.
type stateStore struct {
	mu sync.Mutex
	m  map[string]*history
}

func newStateStore() *stateStore {
	return &stateStore{m: map[string]*history{}}
}

// get returns the history of key, creating an empty one; fresh is true when
// it did (the first evaluation of key by this process).
func (s *stateStore) get(key string) (h *history, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[key]
	if !ok {
		h = &history{}
		s.m[key] = h
	}
	return h, !ok
}

// peek returns the history of key without creating it.
func (s *stateStore) peek(key string) (*history, bool) {
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
