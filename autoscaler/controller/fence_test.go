package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// fixedFence is a LeaseFence with a settable bound.
type fixedFence struct{ until time.Time }

func (f *fixedFence) ValidUntil() time.Time { return f.until }

// A replica whose Lease renewal is too old (frozen, then resumed) evaluates
// nothing — no read, no /scale write — and keeps the key queued; once the
// Lease is renewed the same item scales.
func TestFenceStopsWritesOfAStaleLeader(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	fence := &fixedFence{until: time.Now().Add(-time.Millisecond)}
	f.build()
	f.ctrl.deps.Lease = fence
	f.scales.ClearActions()

	f.ctrl.queue.Add(hpaKey)
	if !f.ctrl.processNextWorkItem(context.Background()) {
		t.Fatal("queue shut down")
	}
	if n := len(f.scales.Actions()); n != 0 {
		t.Fatalf("a fenced evaluation sent %d /scale requests", n)
	}
	if _, ok := f.ctrl.due.take(hpaKey); !ok {
		t.Fatal("the fenced key was not queued again")
	}

	fence.until = time.Now().Add(time.Minute)
	f.ctrl.queue.Add(hpaKey)
	f.ctrl.processNextWorkItem(context.Background())
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates under a held Lease = %v, want [4]", got)
	}
}

// The zero time means the Lease is not held at all.
func TestFenceZeroIsNotHeld(t *testing.T) {
	c := &Controller{deps: Deps{Lease: &fixedFence{}}}
	if _, cancel, held := c.fence(context.Background()); held {
		cancel()
		t.Fatal("zero ValidUntil counted as held")
	}
	c.deps.Lease = &fixedFence{until: time.Now().Add(time.Hour)}
	ctx, cancel, held := c.fence(context.Background())
	defer cancel()
	if dl, ok := ctx.Deadline(); !held || !ok || !dl.Equal(c.deps.Lease.ValidUntil()) {
		t.Fatalf("held=%v deadline=%v,%v; want the Lease bound as deadline", held, dl, ok)
	}
}
