package sampleapp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func workerConfig(queueURL string) Config {
	c := Default()
	c.Mode = ModeWorker
	c.QueueURL = queueURL
	c.CPUPerMessage = 2 * time.Millisecond
	c.PollInterval = 10 * time.Millisecond
	return c
}

// waitFor polls cond every 5ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, d, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

func TestWorkerDrainsQueue(t *testing.T) {
	qreg := prometheus.NewRegistry()
	q := NewQueue(qreg, 100)
	srv := httptest.NewServer(NewQueueMux(qreg, q))
	defer srv.Close()
	q.Enqueue(20)

	reg := prometheus.NewRegistry()
	w := NewWorker(reg, workerConfig(srv.URL+"/"), discardLogger())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	waitFor(t, 10*time.Second, "20 messages processed", func() bool { return testutil.ToFloat64(w.processed) == 20 })
	if q.Len() != 0 {
		t.Errorf("queue holds %d, want 0", q.Len())
	}
	// Polling an empty queue is not an error; a later message is picked up.
	time.Sleep(50 * time.Millisecond)
	q.Enqueue(1)
	waitFor(t, 10*time.Second, "the late message processed", func() bool { return testutil.ToFloat64(w.processed) == 21 })
	if got := testutil.ToFloat64(w.errors); got != 0 {
		t.Errorf("worker_dequeue_errors_total = %v, want 0", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestWorkerCountsErrorsAndBacksOff(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	defer srv.Close()
	cfg := workerConfig(srv.URL)
	cfg.PollInterval = 50 * time.Millisecond
	reg := prometheus.NewRegistry()
	w := NewWorker(reg, cfg, discardLogger())
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	errs, n := testutil.ToFloat64(w.errors), calls.Load()
	if errs < 3 || float64(n) != errs {
		t.Errorf("errors = %v, calls = %d; want every call counted, >= 3", errs, n)
	}
	// One call per poll interval, not a hot loop.
	if n > 15 {
		t.Errorf("%d calls in 500ms with a 50ms poll interval", n)
	}
	if got := testutil.ToFloat64(w.processed); got != 0 {
		t.Errorf("processed = %v, want 0", got)
	}
}
