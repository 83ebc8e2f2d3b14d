package server

import (
	"context"
	"encoding/pem"
	"sync/atomic"
	"testing"
	"time"
)

func certs(n int) []byte {
	var out []byte
	for i := range n {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{byte(i), 1, 2}})...)
	}
	return out
}

// Serving waits for both CAs of the authentication ConfigMap, or one that
// settled, and gives up after the wait.
func TestWaitForCABundle(t *testing.T) {
	ctx := context.Background()
	if !waitForCABundle(ctx, func() []byte { return certs(2) }, time.Second, time.Hour) {
		t.Error("two certificates: not ready")
	}
	if !waitForCABundle(ctx, func() []byte { return certs(1) }, 2*time.Second, 200*time.Millisecond) {
		t.Error("one settled certificate: not ready")
	}
	if waitForCABundle(ctx, func() []byte { return nil }, 300*time.Millisecond, 10*time.Millisecond) {
		t.Error("no certificate: ready")
	}
	// One CA, then the second a moment later: ready only with both.
	var calls atomic.Int32
	grow := func() []byte {
		if calls.Add(1) < 4 {
			return certs(1)
		}
		return certs(2)
	}
	if !waitForCABundle(ctx, grow, 2*time.Second, time.Hour) || calls.Load() < 4 {
		t.Errorf("growing bundle: ready after %d polls, want the second CA", calls.Load())
	}
}
