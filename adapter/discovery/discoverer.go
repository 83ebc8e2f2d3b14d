package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// Options configure a Discoverer.
type Options struct {
	// Client lists series of the default backend; required.
	Client prom.Client
	// Backends list series of the named backends rules may select. Each backend is
	// discovered on its own: a backend that fails keeps its last good metrics while
	// the others' are refreshed.
	Backends prom.Backends
	// Scope tells cluster-scoped resources apart; required.
	Scope Scoper
	// MaxAge bounds how far back series are listed (start = now - MaxAge).
	MaxAge time.Duration
	// OnDemandInterval is the least time between two on-demand discoveries of the
	// same metric name; 0 means 10s.
	OnDemandInterval time.Duration
	// OnDemandRate bounds on-demand discoveries of all names together, per second;
	// 0 means 2 per second with a burst of 10.
	OnDemandRate rate.Limit
	// MaxSeries caps the series one relist may list over all its queries; a relist
	// that would list more fails (the last good registry stays) with
	// ErrTooManySeries. 0 means DefaultMaxSeries.
	MaxSeries int
	// Clock is injected for tests; nil means the real clock.
	Clock clock.PassiveClock
	// Registerer receives the self-metrics; required.
	Registerer prometheus.Registerer
}

// DefaultMaxSeries is the default of Options.MaxSeries.
const DefaultMaxSeries = 2_000_000

// ErrTooManySeries is returned by Relist when Prometheus lists more series than
// Options.MaxSeries; test with errors.Is.
var ErrTooManySeries = errors.New("too many series")

// Discoverer keeps the registry of discovered metrics up to date. Its methods are
// safe for concurrent use.
type Discoverer struct {
	opts    Options
	clients prom.Backends
	rules   atomic.Pointer[[]*rules.Rule]
	reg     atomic.Pointer[Registry]
	synced  atomic.Bool
	metrics *metrics

	mu           sync.Mutex // serialises registry writes
	rulesGen     uint64
	additions    []addition // on-demand results, re-applied over a relist that started before them
	lastTry      map[string]time.Time
	lastTryBytes int
	limiter      *rate.Limiter
	onDemandSF   singleflight.Group
	recovered    map[string]time.Time // by backend after a failed relist: start of the first successful one since (zero while failing; see carryOver)
	regGen       uint64               // rulesGen of the last relist stored
}

type addition struct {
	at  time.Time
	reg *Registry
}

// New returns a Discoverer with no rules and an empty registry.
func New(opts Options) (*Discoverer, error) {
	if opts.Client == nil || opts.Scope == nil || opts.Registerer == nil {
		return nil, errors.New("discovery: client, scope and registerer are required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxSeries <= 0 {
		opts.MaxSeries = DefaultMaxSeries
	}
	if opts.OnDemandInterval <= 0 {
		opts.OnDemandInterval = 10 * time.Second
	}
	burst := 10
	if opts.OnDemandRate <= 0 {
		opts.OnDemandRate = 2
	} else if opts.OnDemandRate < 1 {
		burst = 1
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	d := &Discoverer{opts: opts, clients: prom.WithDefault(opts.Client, opts.Backends), metrics: m, lastTry: map[string]time.Time{}, limiter: rate.NewLimiter(opts.OnDemandRate, burst)}
	d.rules.Store(&[]*rules.Rule{})
	return d, nil
}

// SetRules replaces the rules used by later discoveries. The current registry keeps
// serving until the next successful relist, which callers usually start right away.
func (d *Discoverer) SetRules(rules []*rules.Rule) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rules.Store(&rules)
	d.rulesGen++
	d.additions = nil
}

// Synced reports whether at least one relist has succeeded for at least one backend.
func (d *Discoverer) Synced() bool {
	return d.synced.Load()
}

// Run relists now and then every interval until ctx is done. A backend whose relist
// fails keeps its last good metrics; the failure is logged and counted.
func (d *Discoverer) Run(ctx context.Context, interval time.Duration) {
	logger := klog.FromContext(ctx)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := d.Relist(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Metric discovery failed; the failing backends keep their last good metrics")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Relist lists series for every distinct (backend, series query) and replaces the
// registry. Backends are listed concurrently and independently: the entries of a
// backend whose listing fails are kept as they are, the others' replaced, and the
// error names the failed backends. When every backend fails the registry is left
// unchanged.
func (d *Discoverer) Relist(ctx context.Context) error {
	d.mu.Lock()
	rules, gen := *d.rules.Load(), d.rulesGen
	d.mu.Unlock()
	start := d.opts.Clock.Now()
	backends := splitByBackend(groupByQuery(rules))
	results := d.collectBackends(ctx, rules, backends)
	elapsed := d.opts.Clock.Since(start)
	d.mu.Lock()
	defer d.mu.Unlock()
	if gen != d.rulesGen {
		return errors.New("relist: rules changed during discovery; result discarded")
	}
	current := d.reg.Load()
	parts := make([]*Registry, 0, len(backends))
	var errs []error
	for i, b := range backends {
		r := results[i]
		d.metrics.observeRelist(backendLabel(b.name), r.elapsed, r.err)
		if r.err != nil {
			errs = append(errs, fmt.Errorf("backend %q: %w", backendLabel(b.name), r.err))
			d.relistFailed(b.name)
			parts = append(parts, current.only(b.name))
			continue
		}
		d.metrics.setSeries(backendLabel(b.name), r.reg.series)
		reg, carried := d.carryOver(b.name, r.reg, current, start, d.regGen == gen)
		d.metrics.setCarried(backendLabel(b.name), carried)
		if carried > 0 {
			klog.FromContext(ctx).Info("Kept metrics this relist did not list: the backend failed within the max age", "backend", backendLabel(b.name), "kept", carried)
		}
		parts = append(parts, reg)
	}
	if len(backends) > 0 && len(errs) == len(backends) {
		return fmt.Errorf("relist: %w", errors.Join(errs...))
	}
	reg := mergeByRule(parts)
	kept := d.additions[:0]
	for _, a := range d.additions {
		if !a.at.Before(start) {
			reg = reg.merged(a.reg)
			kept = append(kept, a)
		}
	}
	d.additions = kept
	d.reg.Store(reg)
	d.regGen = gen
	d.synced.Store(true)
	d.metrics.setRegistry(reg)
	klog.FromContext(ctx).V(2).Info("Discovered metrics", "series", reg.series, "custom", len(reg.custom), "external", len(reg.external), "backends", len(backends), "duration", elapsed)
	if len(errs) > 0 {
		return fmt.Errorf("relist (other backends refreshed): %w", errors.Join(errs...))
	}
	return nil
}

// queryGroup is one distinct (backend, series query) and the positions of the rules
// using it.
type queryGroup struct {
	backend string
	query   string
	rules   []int
}

// groupByQuery groups rules whose backends and series queries are identical, so
// each query is sent once to each backend, in first-appearance order.
func groupByQuery(rules []*rules.Rule) []queryGroup {
	var groups []queryGroup
	pos := map[[2]string]int{}
	for i, r := range rules {
		key := [2]string{r.Backend(), r.SeriesQuery()}
		if j, ok := pos[key]; ok {
			groups[j].rules = append(groups[j].rules, i)
			continue
		}
		pos[key] = len(groups)
		groups = append(groups, queryGroup{backend: r.Backend(), query: r.SeriesQuery(), rules: []int{i}})
	}
	return groups
}

// collect streams the series of each group, all of one backend, into a new
// registry.
func (d *Discoverer) collect(ctx context.Context, rules []*rules.Rule, backend string, groups []queryGroup) (*Registry, error) {
	client, err := d.clients.For(backend)
	if err != nil {
		return nil, err
	}
	col := newCollector(rules)
	since := d.opts.Clock.Now().Add(-d.opts.MaxAge)
	for _, g := range groups {
		err := client.Series(ctx, []string{g.query}, since, func(name string, labels []string) error {
			if col.series >= d.opts.MaxSeries {
				return fmt.Errorf("%w: more than %d (raise --metrics-max-series or narrow the seriesQuery)", ErrTooManySeries, d.opts.MaxSeries)
			}
			col.add(g.rules, name, labels)
			return ctx.Err()
		})
		if errors.Is(err, ErrTooManySeries) {
			d.metrics.limited.WithLabelValues(backendLabel(backend), "series").Inc()
		}
		if err != nil {
			return nil, fmt.Errorf("series %q: %w", g.query, err)
		}
	}
	return col.registry(d.opts.Scope), nil
}
