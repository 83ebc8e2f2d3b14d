package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resourcelock.Interface whose writes fail while err is set.
type fakeLock struct {
	resourcelock.Interface
	err error
}

func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return f.err }
func (f *fakeLock) Identity() string                                                { return "me" }

func TestLeaseGuard(t *testing.T) {
	ctx := context.Background()
	lock := &fakeLock{}
	g := newLeaseGuard(lock, 10*time.Second)
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	if !g.ValidUntil().IsZero() {
		t.Fatal("a fresh guard holds nothing")
	}
	mine := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	if err := g.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if got, want := g.ValidUntil(), now.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("after acquiring: valid until %v, want %v (send time + renew deadline)", got, want)
	}
	sent := now
	now = now.Add(3 * time.Second)
	lock.err = errors.New("conflict")
	_ = g.Update(ctx, mine)
	if got, want := g.ValidUntil(), sent.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("a failed renew moved the bound: %v, want %v", got, want)
	}
	lock.err = nil
	if err := g.Update(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if got, want := g.ValidUntil(), now.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("after renewing: %v, want %v", got, want)
	}
	if err := g.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatal(err)
	}
	if !g.ValidUntil().IsZero() {
		t.Fatal("a released Lease is still held")
	}
}
