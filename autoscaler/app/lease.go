package app

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseGuard is the Lease lock of the leader election, remembering when this
// replica last sent a successful acquire or renew. Another replica may take
// the Lease only once it has seen it unchanged for a lease duration, and it
// sees a renew only after the renew was sent, so every write that reaches the
// API server before that send time plus the lease duration is safe. The
// controller therefore bounds each evaluation by ValidUntil: the send time
// plus the renew deadline, which leaves the difference to the lease duration
// as a margin for the request in flight. A replica frozen (SIGSTOP, a long GC
// pause, a suspended VM) wakes up past that time and writes nothing, even
// before its elector notices that the Lease is gone.
type leaseGuard struct {
	resourcelock.Interface
	renewDeadline time.Duration
	now           func() time.Time

	mu        sync.Mutex
	renewedAt time.Time // zero when not held
}

func newLeaseGuard(lock resourcelock.Interface, renewDeadline time.Duration) *leaseGuard {
	return &leaseGuard{Interface: lock, renewDeadline: renewDeadline, now: time.Now}
}

// Create records the acquisition when it succeeds.
func (g *leaseGuard) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := g.now()
	err := g.Interface.Create(ctx, ler)
	g.observe(sent, ler, err)
	return err
}

// Update records the acquisition or renewal when it succeeds; a release
// (an empty holder) or a failure forgets it.
func (g *leaseGuard) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	sent := g.now()
	err := g.Interface.Update(ctx, ler)
	g.observe(sent, ler, err)
	return err
}

func (g *leaseGuard) observe(sent time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err == nil && ler.HolderIdentity == g.Identity():
		g.renewedAt = sent
	case err == nil:
		g.renewedAt = time.Time{}
	}
	// A failed renew keeps the last success: the Lease is still ours until
	// it expires, and ValidUntil already ends before that.
}

// ValidUntil is the time until which this replica's writes are sure to
// precede any other replica's; the zero time when it does not hold the Lease.
func (g *leaseGuard) ValidUntil() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.renewedAt.IsZero() {
		return time.Time{}
	}
	return g.renewedAt.Add(g.renewDeadline)
}
