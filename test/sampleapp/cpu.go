package sampleapp

import (
	"context"
	"runtime"
	"time"
)

// BurnCPU keeps one cpu busy until the calling goroutine's thread has used d
// of cpu time (wall time where the platform has no thread cpu clock), or ctx
// is done. Under cpu contention or a cpu quota it takes longer than d of
// wall time, as real work would; the cpu it costs stays d. It returns the cpu
// time used and ctx.Err() if it stopped early.
func BurnCPU(ctx context.Context, d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, ok := threadCPU()
	if !ok {
		return burnWall(ctx, d)
	}
	var sink uint64
	for i := 0; ; i++ {
		sink = spin(sink)
		now, _ := threadCPU()
		if used := now - start; used >= d {
			return used, nil
		}
		if i%16 == 15 && ctx.Err() != nil {
			now, _ := threadCPU()
			return now - start, ctx.Err()
		}
	}
}

// burnWall spins for d of wall time.
func burnWall(ctx context.Context, d time.Duration) (time.Duration, error) {
	start := time.Now()
	var sink uint64
	for i := 0; time.Since(start) < d; i++ {
		sink = spin(sink)
		if i%16 == 15 && ctx.Err() != nil {
			return time.Since(start), ctx.Err()
		}
	}
	return time.Since(start), nil
}

// spin does a few microseconds of arithmetic the compiler cannot drop.
func spin(x uint64) uint64 {
	for range 2000 {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
