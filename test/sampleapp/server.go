package sampleapp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probes serves /healthz and /readyz. /readyz fails once shutdown began.
type probes struct {
	shuttingDown atomic.Bool
}

func (p *probes) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if p.shuttingDown.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
}

// newRegistry returns a registry with the Go and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// newRequestsCounter registers http_requests_total{code,method,handler}.
func newRequestsCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "HTTP requests answered, by status code, method and handler.",
	}, []string{"code", "method", "handler"})
	reg.MustRegister(c)
	return c
}

// instrument counts the requests h answers under handler name.
func instrument(c *prometheus.CounterVec, name string, h http.Handler) http.Handler {
	return promhttp.InstrumentHandlerCounter(c.MustCurryWith(prometheus.Labels{"handler": name}), h)
}

// serveUntilDone serves mux (plus /metrics of reg and the probes) on ln
// until ctx is done, then fails /readyz, keeps serving for cfg.ShutdownDelay
// so that endpoints drain, and shuts down, waiting at most
// cfg.ShutdownTimeout for requests in flight. It closes ln. A nil error means
// a clean shutdown after ctx was done.
func serveUntilDone(ctx context.Context, cfg Config, ln net.Listener, mux *http.ServeMux, reg *prometheus.Registry, log *slog.Logger) error {
	p := &probes{}
	p.register(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "mode", cfg.Mode, "address", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	p.shuttingDown.Store(true)
	log.Info("shutting down: not ready, draining", "delay", cfg.ShutdownDelay)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-time.After(cfg.ShutdownDelay):
	}
	// New connections are refused from here; keep-alive connections are
	// closed when idle.
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
