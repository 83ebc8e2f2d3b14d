package controller

import (
	"sync"
	"time"
)

// periods remembers, per key, how long after its evaluation an object is
// evaluated again (evaluation.Spec.NextEvaluation: its own sync period,
// shortened when a schedule's floor changes sooner). A key never evaluated
// waits the controller's period.
type periods struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

func newPeriods() *periods { return &periods{m: map[string]time.Duration{}} }

func (p *periods) set(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[key] = d
}

// of returns key's wait, def when it has none yet.
func (p *periods) of(key string, def time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.m[key]; ok {
		return d
	}
	return def
}

func (p *periods) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, key)
}
