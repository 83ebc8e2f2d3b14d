package sampleapp

import (
	"context"

	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Worker takes messages from a queue's POST /dequeue one at a time and burns
// cpu for each.
type Worker struct {
	dequeueURL    string
	client        *http.Client
	cpuPerMessage time.Duration
	pollInterval  time.Duration
	log           *slog.Logger

	processed prometheus.Counter
	errors    prometheus.Counter
}

// NewWorker returns a worker of cfg's queue, its metrics registered on reg:
// worker_messages_processed_total and worker_dequeue_errors_total.
func NewWorker(reg prometheus.Registerer, cfg Config, log *slog.Logger) *Worker {
	w := &Worker{
		dequeueURL:    strings.TrimRight(cfg.QueueURL, "/") + "/dequeue",
		client:        &http.Client{Timeout: cfg.RequestTimeout},
		cpuPerMessage: cfg.CPUPerMessage,
		pollInterval:  cfg.PollInterval,
		log:           log,
		processed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "worker_messages_processed_total", Help: "Messages taken from the queue and processed.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "worker_dequeue_errors_total", Help: "Dequeue requests that failed.",
		}),
	}
	reg.MustRegister(w.processed, w.errors)
	return w
}

// Run processes messages until ctx is done; a message in progress is
// finished first. It waits PollInterval after an empty queue or an error.
// It returns nil once ctx is done.
func (w *Worker) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		got, err := w.dequeue(ctx)
		if err != nil && ctx.Err() == nil {
			w.errors.Inc()
			w.log.Warn("dequeue failed", "err", err)
		}
		if got {
			// Finish the message even if ctx ends meanwhile: it was taken.
			if _, err := BurnCPU(context.WithoutCancel(ctx), w.cpuPerMessage); err != nil {
				return err
			}
			w.processed.Inc()
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(w.pollInterval):
		}
	}
	return nil
}

// dequeue asks the queue for one message and reports whether it got one.
func (w *Worker) dequeue(ctx context.Context) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.dequeueURL, nil)
	if err != nil {
		return false, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNoContent:
		return false, nil
	default:
		return false, fmt.Errorf("POST %s: %s", w.dequeueURL, resp.Status)
	}
}
