package demotest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The real-node lock and the record of the run holding it (test/cluster's
// node_lock.go): a flock of lockFile; ownerFile names the run's node root
// and work directory.
const (
	lockFile  = "/run/ebbflow-real-node/lock"
	ownerFile = "/run/ebbflow-real-node/owner"
	// lockWait bounds the wait for another run (a real-node test package,
	// another engineer's demo) to free the lock.
	lockWait = 30 * time.Minute
)

// tryLock takes the real-node lock without waiting; held is true when
// another process holds it.
func tryLock() (f *os.File, held bool, err error) {
	if err := os.MkdirAll("/run/ebbflow-real-node", 0o755); err != nil {
		return nil, false, err
	}
	f, err = os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("flock %s: %w", lockFile, err)
	}
	return f, false, nil
}

// lockHolder returns the PID /proc/locks names as holding the lock's
// flock, or 0.
func lockHolder() int {
	var st syscall.Stat_t
	if syscall.Stat(lockFile, &st) != nil {
		return 0
	}
	b, _ := os.ReadFile("/proc/locks")
	for line := range strings.Lines(string(b)) {
		// 1: FLOCK  ADVISORY  WRITE 6002 fe:00:10011091 0 EOF
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(f[5], ":")
		if ino, err := strconv.ParseUint(dev[len(dev)-1], 10, 64); err == nil && ino == st.Ino {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}

// withLock takes the real-node lock, waiting for other runs, calls fn while
// holding it, and frees it. held, when not nil, is told once if the lock
// was held at the first try and by whom (the PID /proc/locks names).
func withLock(t *testing.T, held func(pid int), fn func()) {
	t.Helper()
	deadline := time.Now().Add(lockWait)
	for first := true; ; first = false {
		f, busy, err := tryLock()
		if err != nil {
			t.Fatal(err)
		}
		if !busy {
			defer f.Close()
			fn()
			return
		}
		if first {
			pid := lockHolder()
			t.Logf("the real-node lock is held (by PID %d); waiting", pid)
			if held != nil {
				held(pid)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the real-node lock is still held after %v", lockWait)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
