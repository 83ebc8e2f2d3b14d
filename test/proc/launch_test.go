package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLaunchReady(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "child.log")
	spec := func(script string) Spec {
		return Spec{Harness: "proctest", Name: "child", Bin: "/bin/sh", Args: []string{"-c", script}, Dir: dir, Env: []string{"CHILD_WORD=ready"}, LogPath: log}
	}
	ctx := context.Background()
	// Ready once its file exists; its environment and its output reach the log.
	flag := filepath.Join(dir, "up")
	p, err := LaunchReady(ctx, spec("echo $CHILD_WORD; : > "+flag+"; exec sleep 30"), 10*time.Millisecond, 5*time.Second, func(context.Context) bool {
		_, err := os.Stat(flag)
		return err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(time.Second)
	if tail := LogTail(log, 2); !strings.HasPrefix(tail, "=== proctest: starting /bin/sh") || !strings.HasSuffix(tail, "\nready") {
		t.Errorf("log tail %q: want the header line and the child's output", tail)
	}
	never := func(context.Context) bool { return false }
	// An early exit saying its address is taken wraps ErrAddrInUse, with the log.
	_, err = LaunchReady(ctx, spec("echo 'listen tcp 127.0.0.1:9: bind: address already in use'; exit 1"), 10*time.Millisecond, 5*time.Second, never)
	if !errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), "bind: address already in use") {
		t.Errorf("early exit on a taken address: %v", err)
	}
	// Another early exit does not, and a child never ready is killed at the timeout.
	if _, err = LaunchReady(ctx, spec("echo broken; exit 3"), 10*time.Millisecond, 5*time.Second, never); err == nil || errors.Is(err, ErrAddrInUse) || !strings.Contains(err.Error(), "exited before it was ready") {
		t.Errorf("early exit: %v", err)
	}
	begin := time.Now()
	if _, err = LaunchReady(ctx, spec("exec sleep 30"), 10*time.Millisecond, 200*time.Millisecond, never); err == nil || !strings.Contains(err.Error(), "not ready after 200ms") {
		t.Errorf("never ready: %v", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("never-ready child took %v to be given up and killed", d)
	}

	calls := 0
	err = RetryAddrInUse(3, func() error { calls++; return ErrAddrInUse })
	if !errors.Is(err, ErrAddrInUse) || calls != 3 {
		t.Errorf("retry: %d calls, %v; want 3 and ErrAddrInUse", calls, err)
	}
	calls = 0
	if err = RetryAddrInUse(3, func() error { calls++; return errors.New("other") }); calls != 1 || err == nil {
		t.Errorf("retry of another error: %d calls, %v; want 1", calls, err)
	}
	if LogTail(filepath.Join(dir, "none"), 3) == "" {
		t.Error("LogTail of a missing file: empty, want a note")
	}
}
