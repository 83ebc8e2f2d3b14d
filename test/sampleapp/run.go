package sampleapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
)

// Run runs cfg's mode until ctx is done, then shuts down as described in the
// package documentation. cfg must be valid (Config.Validate). The listener
// is opened before Run returns an error for it; a nil error means a clean
// shutdown.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if errs := cfg.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddress)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return RunListener(ctx, cfg, ln, log)
}

// RunListener is Run on an open listener, which it closes.
func RunListener(ctx context.Context, cfg Config, ln net.Listener, log *slog.Logger) error {
	reg := newRegistry()
	var mux *http.ServeMux
	var worker *Worker
	switch cfg.Mode {
	case ModeServe:
		mux = NewServeMux(reg, cfg.CPUPerRequest)
	case ModeQueue:
		mux = NewQueueMux(reg, NewQueue(reg, cfg.QueueSize))
	case ModeWorker:
		mux = http.NewServeMux()
		worker = NewWorker(reg, cfg, log)
	default:
		ln.Close()
		return fmt.Errorf("unknown mode %q", cfg.Mode)
	}
	if worker == nil {
		return serveUntilDone(ctx, cfg, ln, mux, reg, log)
	}
	// The worker stops taking messages at once; its server drains like the
	// others so probes and the last scrape still answer.
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { werr = worker.Run(ctx) })
	serr := serveUntilDone(ctx, cfg, ln, mux, reg, log)
	wg.Wait()
	return errors.Join(werr, serr)
}
