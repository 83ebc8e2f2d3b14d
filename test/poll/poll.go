// Package poll waits in tests for a condition on real components, which settle
// in their own time.
package poll

import (
	"testing"
	"time"
)

// Interval is the time between two checks.
const Interval = 500 * time.Millisecond

// Until calls fn every Interval until it returns nil, and fails the test with
// fn's last error if that has not happened within timeout.
func Until(t testing.TB, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(Interval)
	}
}
