package proc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrExited is what WaitFor's error wraps when the process exited before
// the condition held.
var ErrExited = errors.New("process exited")

// WaitFor calls cond at once and then every interval until it reports true
// (nil) or an error (returned as is), ctx ends (ctx's error), or p, when not
// nil, exits (an error wrapping ErrExited with p's exit status): the wait for
// a child to become ready that gives up as soon as the child is gone. Bound
// it with ctx's deadline.
func WaitFor(ctx context.Context, p *Process, interval time.Duration, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var done <-chan struct{}
	if p != nil {
		done = p.Done()
	}
	for {
		ok, err := cond(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%w (%v)", ErrExited, p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
