package proc

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"
)

func TestWaitForEndsWhenTheProcessExits(t *testing.T) {
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = WaitFor(ctx, p, time.Millisecond, func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, ErrExited) || p.Err() == nil {
		t.Fatalf("WaitFor: %v, exit %v; want ErrExited with the exit status", err, p.Err())
	}
}

func TestWaitForConditionAndContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	calls := 0
	err := WaitFor(ctx, nil, time.Millisecond, func(context.Context) (bool, error) { calls++; return calls == 3, nil })
	if err != nil || calls != 3 {
		t.Errorf("WaitFor: %v after %d calls, want nil after 3", err, calls)
	}
	boom := errors.New("boom")
	if err := WaitFor(ctx, nil, time.Millisecond, func(context.Context) (bool, error) { return false, boom }); err != boom {
		t.Errorf("WaitFor: %v, want the condition's error", err)
	}
	cancel()
	if err := WaitFor(ctx, nil, time.Hour, func(context.Context) (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitFor: %v, want the context's error", err)
	}
}
