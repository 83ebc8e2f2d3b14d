package prom

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/singleflight"
)

// GuardOptions bound what the adapter asks of a shared Prometheus.
type GuardOptions struct {
	// MaxConcurrent caps requests in flight to Prometheus; <= 0 means 1.
	MaxConcurrent int
	// Timeout caps every request; <= 0 means no cap beyond the caller's deadline.
	Timeout time.Duration
}

// Guard wraps a Client: identical concurrent queries are sent once (singleflight), at
// most MaxConcurrent requests are in flight, every request is timed and counted.
// Each backend has its own Guard, so one slow backend cannot use another's slots.
type Guard struct {
	next    Client
	sem     chan struct{}
	timeout time.Duration
	flights singleflight.Group
	metrics guardObservers
}

var _ Client = (*Guard)(nil)

// Guard wraps next, the client of the named backend, counting in m.
func (m *GuardMetrics) Guard(next Client, opts GuardOptions, backend string) *Guard {
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 1
	}
	return &Guard{next: next, sem: make(chan struct{}, opts.MaxConcurrent), timeout: opts.Timeout, metrics: m.observers(backend)}
}

// GuardBackends wraps the client of every named backend in its own Guard,
// counting in m: each backend has its own concurrency slots (its
// maxConcurrentQueries, else the default it was loaded with) and singleflight,
// and self-metrics labelled by its name.
func (m *GuardMetrics) GuardBackends(backends map[string]BackendClient) Backends {
	out := make(Backends, len(backends))
	for name, b := range backends {
		out[name] = m.Guard(b.Client, GuardOptions{MaxConcurrent: b.MaxConcurrent, Timeout: b.Timeout}, name)
	}
	return out
}

// Query implements Client. Callers asking the same query while one is in flight share
// its answer; each caller still returns as soon as its own ctx is done.
func (g *Guard) Query(ctx context.Context, query string) (model.Vector, error) {
	ch := g.flights.DoChan(query, func() (any, error) {
		// The shared call must not fail because the first caller went away, so it
		// runs detached from that caller's cancellation but keeps its deadline.
		callCtx, cancel := g.detached(ctx)
		defer cancel()
		var v model.Vector
		err := g.run(callCtx, "query", func(ctx context.Context) error {
			var err error
			v, err = g.next.Query(ctx, query)
			return err
		})
		return v, err
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Shared {
			g.metrics.shared.Inc()
		}
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(model.Vector), nil
	}
}

// LabelValues implements Client.
func (g *Guard) LabelValues(ctx context.Context, label string, matches []string, start time.Time) ([]string, error) {
	ctx, cancel := g.bounded(ctx)
	defer cancel()
	var values []string
	err := g.run(ctx, "label_values", func(ctx context.Context) error {
		var err error
		values, err = g.next.LabelValues(ctx, label, matches, start)
		return err
	})
	return values, err
}

// Series implements Client.
func (g *Guard) Series(ctx context.Context, matches []string, start time.Time, fn func(string, []string) error) error {
	ctx, cancel := g.bounded(ctx)
	defer cancel()
	return g.run(ctx, "series", func(ctx context.Context) error {
		return g.next.Series(ctx, matches, start, fn)
	})
}

// run waits for a slot, calls fn and records duration and outcome.
func (g *Guard) run(ctx context.Context, endpoint string, fn func(context.Context) error) error {
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		g.metrics.requests.WithLabelValues(endpoint, outcome(ctx.Err())).Observe(0)
		return ctx.Err()
	}
	g.metrics.inflight.Inc()
	start := time.Now()
	err := fn(ctx)
	g.metrics.inflight.Dec()
	<-g.sem
	g.metrics.requests.WithLabelValues(endpoint, outcome(err)).Observe(time.Since(start).Seconds())
	if limit := limitKind(err); limit != "" {
		g.metrics.limited.WithLabelValues(limit).Inc()
	}
	return err
}

func (g *Guard) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.timeout)
}

func (g *Guard) detached(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	deadline, ok := ctx.Deadline()
	if g.timeout > 0 {
		if capped := time.Now().Add(g.timeout); !ok || capped.Before(deadline) {
			deadline, ok = capped, true
		}
	}
	if !ok {
		return context.WithCancel(detached)
	}
	return context.WithDeadline(detached, deadline)
}

func outcome(err error) string {
	var apiErr *APIError
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &apiErr):
		return "prometheus_error"
	case limitKind(err) != "":
		return "limit_exceeded"
	default:
		return "transport_error"
	}
}

// GuardMetrics are the self-metrics of the Guards of one adapter, labelled by backend.
type GuardMetrics struct {
	requests *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
	shared   *prometheus.CounterVec
	limited  *prometheus.CounterVec
}

// guardObservers are GuardMetrics for one backend.
type guardObservers struct {
	requests prometheus.ObserverVec
	inflight prometheus.Gauge
	shared   prometheus.Counter
	limited  *prometheus.CounterVec
}

func (m *GuardMetrics) observers(backend string) guardObservers {
	b := prometheus.Labels{"backend": backend}
	return guardObservers{
		requests: m.requests.MustCurryWith(b),
		inflight: m.inflight.With(b),
		shared:   m.shared.With(b),
		limited:  m.limited.MustCurryWith(b),
	}
}

// NewGuardMetrics registers the Guards' self-metrics with reg.
func NewGuardMetrics(reg prometheus.Registerer) (*GuardMetrics, error) {
	m := &GuardMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ebbflow_adapter", Subsystem: "prometheus", Name: "request_duration_seconds",
			Help:    "Duration of requests to Prometheus by backend, endpoint and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"backend", "endpoint", "outcome"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "prometheus", Name: "inflight_requests",
			Help: "Requests to Prometheus currently in flight, by backend.",
		}, []string{"backend"}),
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_adapter", Subsystem: "prometheus", Name: "deduplicated_queries_total",
			Help: "Queries answered by sharing an identical query already in flight, by backend.",
		}, []string{"backend"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_adapter", Subsystem: "prometheus", Name: "limit_exceeded_total",
			Help: "Prometheus answers dropped because they exceeded a cap, by backend and cap (response_bytes, series_bytes).",
		}, []string{"backend", "limit"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.inflight, m.shared, m.limited} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
