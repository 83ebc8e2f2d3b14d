package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// retryPolicy bounds re-watching: after a watch fails (it could not start,
// ended with an error, or closed early without delivering anything), follow
// waits Delay, doubling up to MaxDelay, and gives up after Attempts failures
// in a row. A watch that delivered something or lasted Healthy resets the
// count; an expired resource version is not a failure (follow reads the
// object again and watches from there).
type retryPolicy struct {
	Attempts        int
	Delay, MaxDelay time.Duration
	Healthy         time.Duration
}

var defaultRetry = retryPolicy{Attempts: 5, Delay: time.Second, MaxDelay: 16 * time.Second, Healthy: 30 * time.Second}

// watchEnd is how one watch ended.
type watchEnd int

const (
	endClosed  watchEnd = iota // the server closed it
	endExpired                 // its resource version is too old
	endFailed                  // it failed (err says why)
	endStopped                 // the context is done
)

// follower prints each new decision once, by record time.
type follower struct {
	o       *explainOptions
	src     source
	out     io.Writer
	last    *metav1.Time
	printed int
}

// show prints v's record unless it is not newer than the last one printed.
func (f *follower) show(v decisionView) error {
	rec := v.Record
	if rec == nil || (f.last != nil && !rec.Time.After(f.last.Time)) {
		return nil
	}
	t := rec.Time
	f.last = &t
	if f.printed > 0 && f.o.output == outputTable {
		if _, err := io.WriteString(f.out, "\n"); err != nil {
			return err
		}
	}
	f.printed++
	return f.o.print(f.out, v)
}

// follow prints first's decision and every later one, following the object
// with a watch from first's resource version until ctx is done (nil) or the
// object is deleted, becomes unreadable or the watch keeps failing (error).
func (o *explainOptions) follow(ctx context.Context, src source, first decisionView, out, errOut io.Writer) error {
	f := &follower{o: o, src: src, out: out}
	if first.Record == nil {
		fmt.Fprintf(errOut, "%s has no decision yet; waiting for the first one\n", src.describe())
	}
	if err := f.show(first); err != nil {
		return err
	}
	rv, failures := first.ResourceVersion, 0
	for {
		started := o.now()
		next, progressed, end, err := f.watchOnce(ctx, rv)
		if ctx.Err() != nil || end == endStopped {
			return nil
		}
		rv = next
		healthy := progressed || o.now().Sub(started) >= o.retry.Healthy
		if healthy {
			failures = 0
		}
		switch end {
		case endExpired:
			v, gerr := src.get(ctx)
			if gerr != nil {
				err = gerr
				break
			}
			rv = v.ResourceVersion
			if err := f.show(v); err != nil {
				return err
			}
			if healthy {
				continue
			}
			err = errors.New("the resource version expired at once")
		case endClosed:
			if healthy {
				continue
			}
			err = errors.New("the watch closed at once")
		}
		if terminal(err) {
			return err
		}
		failures++
		if failures >= o.retry.Attempts {
			return fmt.Errorf("watch %s: giving up after %d failed attempts: %v", src.describe(), failures, err)
		}
		if !sleep(ctx, o.retry.backoff(failures)) {
			return nil
		}
	}
}

// watchOnce runs one watch from rv and shows each decision it delivers. It
// returns the resource version to go on from, whether anything arrived, and
// how the watch ended. err is set for endFailed and for errors that end
// follow (the object was deleted or is not an ebbflow object any more).
func (f *follower) watchOnce(ctx context.Context, rv string) (string, bool, watchEnd, error) {
	w, err := f.src.watch(ctx, rv)
	if err != nil {
		return rv, false, endFailed, err
	}
	defer w.Stop()
	progressed := false
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return rv, progressed, endStopped, nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return rv, progressed, endClosed, nil
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetName() != f.src.objectName() {
				continue // the field selector already excludes it on a real server
			}
			v, err := f.src.view(ev.Object)
			if err != nil {
				return rv, progressed, endFailed, &stopError{err}
			}
			rv, progressed = v.ResourceVersion, true
			if err := f.show(v); err != nil {
				return rv, progressed, endFailed, &stopError{err}
			}
		case watch.Deleted:
			return rv, progressed, endFailed, &stopError{fmt.Errorf("%s was deleted", f.src.describe())}
		case watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil {
				rv, progressed = m.GetResourceVersion(), true
			}
		case watch.Error:
			status := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(status) || apierrors.IsGone(status) {
				return rv, progressed, endExpired, nil
			}
			return rv, progressed, endFailed, fmt.Errorf("watch %s: %v", f.src.describe(), status)
		}
	}
}

// stopError ends follow without retrying.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// terminal reports whether retrying after err is pointless: follow was told
// to stop, the object is gone, or reading it is forbidden.
func terminal(err error) bool {
	var stop *stopError
	return errors.As(err, &stop) || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) ||
		apierrors.IsUnauthorized(err) || apierrors.IsMethodNotSupported(err)
}

func (p retryPolicy) backoff(failures int) time.Duration {
	d := p.Delay
	for i := 1; i < failures && d < p.MaxDelay; i++ {
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
