package sampleapp

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// processCPU returns the user+system cpu time of this process.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestBurnCPU(t *testing.T) {
	const d = 50 * time.Millisecond
	cpu0, wall0 := processCPU(t), time.Now()
	used, err := BurnCPU(context.Background(), d)
	cpu, wall := processCPU(t)-cpu0, time.Since(wall0)
	if err != nil {
		t.Fatal(err)
	}
	if used < d || used > d+20*time.Millisecond {
		t.Errorf("BurnCPU used %v, want %v (+ < 20ms)", used, d)
	}
	// The process' own accounting agrees (getrusage has tick granularity).
	if cpu < d-10*time.Millisecond {
		t.Errorf("process cpu grew by %v, want >= %v", cpu, d)
	}
	if wall < d-time.Millisecond {
		t.Errorf("burning %v of cpu took only %v of wall time", d, wall)
	}
	if used, err := BurnCPU(context.Background(), 0); used != 0 || err != nil {
		t.Errorf("BurnCPU(0) = %v, %v", used, err)
	}
}

func TestBurnCPUCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	used, err := BurnCPU(ctx, time.Hour)
	if err == nil {
		t.Fatal("BurnCPU(1h) returned without the context's error")
	}
	if el := time.Since(start); el > 2*time.Second || used > 2*time.Second {
		t.Errorf("BurnCPU stopped %v after the start, used %v; want it to stop soon after 30ms", el, used)
	}
}
