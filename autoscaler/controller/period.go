package controller

import (
	"sync"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// MinRequeue is the shortest wait before an object's next evaluation: the
// floor of spec.syncPeriodSeconds, and of an earlier evaluation for a
// schedule's floor that changes before the period is over.
const MinRequeue = time.Second

// periods remembers, per key, how long after its evaluation an object is
// evaluated again: its own sync period (spec.syncPeriodSeconds, else the
// controller's), shortened when a schedule's floor changes sooner (a start,
// a ramp's step, an end), so a floor is applied on time even under a long
// period. A key never evaluated waits the controller's period.
type periods struct {
	mu sync.Mutex
	m  map[string]time.Duration
}

func newPeriods() *periods { return &periods{m: map[string]time.Duration{}} }

// next is the wait after an evaluation of spec at now whose floor is f.
func nextEvaluation(spec *evaluation.Spec, f *evaluation.Floor, now time.Time, global time.Duration) time.Duration {
	d := global
	if spec.SyncPeriod > 0 {
		d = spec.SyncPeriod
	}
	if !f.NextChange.IsZero() {
		if until := f.NextChange.Sub(now); until < d {
			d = until
		}
	}
	return max(d, MinRequeue)
}

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
