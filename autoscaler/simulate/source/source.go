// Package source reads the history of an autoscaler's metrics from
// Prometheus as ebbflow-adapter would have served it at each step: the same
// rules, the same discovery, the same PromQL (package adapter/rules), the same
// sample values (NaN and infinities as the adapter treats them), evaluated
// with query_range over the whole range (chunked) instead of one instant
// query per evaluation. It is the I/O edge of `ebbflow simulate`.
package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/ebbflow/ebbflow/adapter/discovery"
	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// Client is what the reader asks of Prometheus: series discovery (as the
// adapter) and range queries.
type Client interface {
	prom.Client
	prom.RangeQuerier
}

// Range is the replay's time grid: Start, Start+Step, … up to End.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

// Steps is the number of evaluations in the range.
func (r Range) Steps() int {
	if r.Step <= 0 || r.End.Before(r.Start) {
		return 0
	}
	return int(r.End.Sub(r.Start)/r.Step) + 1
}

// index is the step of a sample taken at t, false when off the grid.
func (r Range) index(t time.Time) (int, bool) {
	d := t.Sub(r.Start)
	if d < 0 {
		return 0, false
	}
	i := int((d + r.Step/2) / r.Step)
	return i, i < r.Steps()
}

// Options configure a Reader.
type Options struct {
	Rules *rules.Set
	// Client is the default backend (--prometheus-url).
	Client Client
	// Backends are the named backends of --prometheus-backends-file, by name;
	// a rule's backend field selects one, as in the adapter. Rules must have
	// been checked against these names (rules.Options.Backends).
	Backends map[string]Client
	Mapper   meta.RESTMapper
	// NaNValues is the adapter's --nan-values (a rule's nanValues wins).
	NaNValues string
	Range     Range
	// Lookback is how far before Start series are discovered (Prometheus'
	// lookback delta, 5m by default).
	Lookback time.Duration
	// Timeout bounds each request to Prometheus (--prometheus-timeout); 0
	// means none beyond the caller's context.
	Timeout time.Duration
	// BackendTimeouts bound the range queries of named backends (their
	// timeout in the backends file); a backend absent here uses Timeout.
	BackendTimeouts map[string]time.Duration
}

// Reader reads metric histories. One Reader serves one range; it remembers
// what it read, so specs that share a metric cost one query.
type Reader struct {
	opts  Options
	disc  *discovery.Discoverer
	cache map[string]simulate.Series
}

// New returns a Reader over opts.Range.
func New(opts Options) (*Reader, error) {
	if opts.Rules == nil || opts.Client == nil || opts.Mapper == nil {
		return nil, errors.New("source: rules, client and mapper are required")
	}
	if opts.Range.Steps() == 0 {
		return nil, errors.New("the range holds no step (is the end before the start?)")
	}
	if opts.Lookback <= 0 {
		opts.Lookback = 5 * time.Minute
	}
	named := make(prom.Backends, len(opts.Backends))
	for name, c := range opts.Backends {
		named[name] = c
	}
	d, err := discovery.New(discovery.Options{
		Client: opts.Client, Backends: named, Scope: discovery.MapperScope{Mapper: opts.Mapper},
		MaxAge:     opts.Range.End.Sub(opts.Range.Start) + opts.Lookback,
		Clock:      fixedClock(opts.Range.End),
		Registerer: prometheus.NewRegistry(),
		// One discovery per metric of the specs, each asked once: the
		// adapter's limits against request floods have nothing to guard.
		OnDemandInterval: time.Nanosecond,
		OnDemandRate:     rate.Inf,
	})
	if err != nil {
		return nil, err
	}
	d.SetRules(opts.Rules.Rules)
	return &Reader{opts: opts, disc: d, cache: map[string]simulate.Series{}}, nil
}

// Check asks every backend one cheap question (the label values of one
// metric name), so that an unreachable or refusing Prometheus is reported as
// such rather than as metrics that no rule serves (discovery keeps its
// errors to itself, as in the adapter).
func (r *Reader) Check(ctx context.Context) error {
	names := append([]string{""}, slices.Sorted(maps.Keys(r.opts.Backends))...)
	for _, name := range names {
		c, err := r.client(name)
		if err != nil {
			return err
		}
		cctx, cancel := r.backendContext(ctx, name)
		_, err = c.LabelValues(cctx, "__name__", []string{"up"}, r.opts.Range.Start)
		cancel()
		switch {
		case err != nil && name == "":
			return fmt.Errorf("prometheus: %w", err)
		case err != nil:
			return fmt.Errorf("prometheus backend %q: %w", name, err)
		}
	}
	return nil
}

// client is the client of the named backend ("" for the default).
func (r *Reader) client(backend string) (Client, error) {
	if backend == "" {
		return r.opts.Client, nil
	}
	if c, ok := r.opts.Backends[backend]; ok && c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w %q", prom.ErrUnknownBackend, backend)
}

// Query describes one metric read: the namespace of the autoscaler and, for
// Pods metrics, the names of the target's pods.
type Query struct {
	Namespace string
	PodNames  *regexp.Regexp
}

// backendContext bounds one request to the named backend by its timeout.
func (r *Reader) backendContext(ctx context.Context, backend string) (context.Context, context.CancelFunc) {
	if t, ok := r.opts.BackendTimeouts[backend]; ok && t > 0 {
		return context.WithTimeout(ctx, t)
	}
	return r.requestContext(ctx)
}

// requestContext bounds one request to Prometheus by Options.Timeout.
func (r *Reader) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.opts.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, r.opts.Timeout)
}

// fixedClock is a clock standing at the end of the range, so discovery
// lists the series seen during it.
type fixedClock time.Time

func (c fixedClock) Now() time.Time                  { return time.Time(c) }
func (c fixedClock) Since(t time.Time) time.Duration { return time.Time(c).Sub(t) }

// rangeQuery evaluates q in backend ("" for the default) over the reader's
// range in chunks of at most prom.MaxRangePoints steps and calls fn with
// every point's step index.
func (r *Reader) rangeQuery(ctx context.Context, backend, q string, fn func(series int, labels map[string]string, step int, v float64)) error {
	client, err := r.client(backend)
	if err != nil {
		return err
	}
	rng := r.opts.Range
	total := rng.Steps()
	series := map[string]int{}
	for first := 0; first < total; first += prom.MaxRangePoints {
		last := min(first+prom.MaxRangePoints, total) - 1
		start := rng.Start.Add(time.Duration(first) * rng.Step)
		end := rng.Start.Add(time.Duration(last) * rng.Step)
		qctx, cancel := r.backendContext(ctx, backend)
		m, err := client.QueryRange(qctx, q, start, end, rng.Step)
		cancel()
		if err != nil {
			return fmt.Errorf("query_range %s: %w", q, err)
		}
		for _, s := range m {
			key := s.Metric.String()
			id, ok := series[key]
			if !ok {
				id = len(series)
				series[key] = id
			}
			labels := make(map[string]string, len(s.Metric))
			for k, v := range s.Metric {
				labels[string(k)] = string(v)
			}
			for _, p := range s.Values {
				if i, ok := rng.index(p.Timestamp.Time()); ok {
					fn(id, labels, i, float64(p.Value))
				}
			}
		}
	}
	return nil
}
