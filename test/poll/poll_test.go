package poll

import (
	"errors"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatalf instead of stopping the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

func TestUntil(t *testing.T) {
	calls := 0
	Until(t, time.Minute, "third call", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("fn called %d times, want 3", calls)
	}

	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != r {
				panic(p)
			}
		}()
		Until(r, 0, "never", func() error { return errors.New("no") })
	}()
	if r.failed == "" {
		t.Error("Until did not fail after its timeout")
	}
}
