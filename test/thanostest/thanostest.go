// Package thanostest runs a highly available Prometheus for tests: several
// real Prometheus replicas scraping the same targets, each with its own
// `replica` external label and a Thanos sidecar, behind one Thanos Query that
// deduplicates on that label. It is what users who outgrow one Prometheus run,
// on loopback and bounded in time.
//
// The thanos binary comes from hack/build-tools.sh (tool "thanos"), Prometheus
// from hack/install-prometheus.sh, as for package promtest.
package thanostest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ebbflow/ebbflow/test/promtest"
)

// Options configure an HA pair (or more) behind Thanos Query.
type Options struct {
	// Thanos is the path of the thanos binary. Required.
	Thanos string
	// Replicas is the number of Prometheus replicas (default 2).
	Replicas int
	// ReplicaLabel is the external label that tells replicas apart and on
	// which Thanos Query deduplicates (default "replica"). Replica i gets the
	// value "prometheus-<i>".
	ReplicaLabel string
	// ExternalLabels are further external labels of every replica (e.g. a
	// tenant label for Thanos Query's tenancy enforcement).
	ExternalLabels map[string]string
	// Targets, ScrapeInterval and LookbackDelta are passed to every replica
	// (see promtest.Options).
	Targets        []promtest.Target
	ScrapeInterval time.Duration
	LookbackDelta  time.Duration
	// QueryArgs are appended to Thanos Query's command line.
	QueryArgs []string
	// Dir holds one directory per component. Empty means a new temporary
	// directory that Close removes.
	Dir string
	// ReadyTimeout bounds the start-up of each component (default 60s).
	ReadyTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Replicas <= 0 {
		o.Replicas = 2
	}
	if o.ReplicaLabel == "" {
		o.ReplicaLabel = "replica"
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 60 * time.Second
	}
	return o
}

// HA is a running set of Prometheus replicas with sidecars behind Thanos
// Query. Its methods are safe for concurrent use.
type HA struct {
	opts    Options
	dir     string
	ownsDir bool

	mu       sync.Mutex
	replicas []*promtest.Server
	sidecars []*component
	query    *component
	closed   bool
}

// Start starts the replicas, their sidecars and Thanos Query, and returns once
// Query answers /-/ready and sees every sidecar. ctx bounds only the start-up.
// On error everything already started is stopped.
func Start(ctx context.Context, opts Options) (_ *HA, err error) {
	opts = opts.withDefaults()
	if opts.Thanos == "" {
		return nil, errors.New("thanostest: Options.Thanos (the thanos binary) is required: hack/build-tools.sh thanos")
	}
	if _, err := os.Stat(opts.Thanos); err != nil {
		return nil, fmt.Errorf("thanostest: thanos binary: %w", err)
	}
	h := &HA{opts: opts, dir: opts.Dir}
	if h.dir == "" {
		if h.dir, err = os.MkdirTemp("", "thanostest-"); err != nil {
			return nil, fmt.Errorf("thanostest: %w", err)
		}
		h.ownsDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("thanostest: %w", err), h.Close())
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, opts.ReadyTimeout)
	defer cancel()
	for i := range opts.Replicas {
		if err := h.startReplica(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := h.startQuery(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// replicaName is the value of the replica label of replica i.
func replicaName(i int) string { return "prometheus-" + strconv.Itoa(i) }

// startReplica starts Prometheus replica i and its sidecar.
func (h *HA) startReplica(ctx context.Context, i int) error {
	labels := map[string]string{h.opts.ReplicaLabel: replicaName(i)}
	for k, v := range h.opts.ExternalLabels {
		labels[k] = v
	}
	dir := filepath.Join(h.dir, replicaName(i))
	s, err := promtest.StartProcess(ctx, promtest.Options{
		Targets:        h.opts.Targets,
		ScrapeInterval: h.opts.ScrapeInterval,
		LookbackDelta:  h.opts.LookbackDelta,
		ExternalLabels: labels,
		Dir:            dir,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", replicaName(i), err)
	}
	h.mu.Lock()
	h.replicas = append(h.replicas, s)
	h.mu.Unlock()
	sc, err := startComponent(ctx, h.opts.Thanos, "sidecar-"+strconv.Itoa(i), dir, func(grpc, http string) []string {
		return []string{"sidecar",
			"--prometheus.url=" + s.URL(),
			"--tsdb.path=" + filepath.Join(dir, "data"),
			"--grpc-address=" + grpc,
			"--http-address=" + http,
			"--log.level=info",
		}
	})
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.sidecars = append(h.sidecars, sc)
	h.mu.Unlock()
	return nil
}

// startQuery starts Thanos Query over every sidecar and waits until it lists
// them all.
func (h *HA) startQuery(ctx context.Context) error {
	h.mu.Lock()
	endpoints := make([]string, 0, len(h.sidecars))
	for _, sc := range h.sidecars {
		endpoints = append(endpoints, "--endpoint="+sc.grpcAddr)
	}
	h.mu.Unlock()
	q, err := startComponent(ctx, h.opts.Thanos, "query", filepath.Join(h.dir, "query"), func(grpc, http string) []string {
		args := []string{"query",
			"--grpc-address=" + grpc,
			"--http-address=" + http,
			"--query.replica-label=" + h.opts.ReplicaLabel,
			"--log.level=info",
		}
		args = append(args, endpoints...)
		return append(args, h.opts.QueryArgs...)
	})
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.query = q
	h.mu.Unlock()
	return waitUntil(ctx, "thanos query to see every sidecar", q, func(ctx context.Context) (bool, error) {
		n, err := q.healthyStores(ctx)
		return n == len(endpoints), err
	})
}

// QueryURL is the base URL of Thanos Query's Prometheus-compatible HTTP API.
func (h *HA) QueryURL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "http://" + h.query.httpAddr
}

// Replica returns Prometheus replica i (Kill, Restart, Query, ...).
func (h *HA) Replica(i int) *promtest.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.replicas[i]
}

// Replicas is the number of Prometheus replicas.
func (h *HA) Replicas() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.replicas)
}

// SetTargets replaces the scrape targets of every replica.
func (h *HA) SetTargets(ctx context.Context, targets []promtest.Target) error {
	h.mu.Lock()
	replicas := append([]*promtest.Server(nil), h.replicas...)
	h.mu.Unlock()
	var errs []error
	for _, r := range replicas {
		errs = append(errs, r.SetTargets(ctx, targets))
	}
	return errors.Join(errs...)
}

// LogTail returns the last n lines of every component's log.
func (h *HA) LogTail(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out string
	for i, r := range h.replicas {
		out += fmt.Sprintf("--- %s:\n%s\n", replicaName(i), r.LogTail(n))
	}
	for _, c := range append(append([]*component(nil), h.sidecars...), h.query) {
		if c != nil {
			out += fmt.Sprintf("--- thanos %s:\n%s\n", c.name, c.logTail(n))
		}
	}
	return out
}

// Close stops every component and removes the directory if Start created it.
// It is idempotent.
func (h *HA) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if h.query != nil {
		h.query.stop()
	}
	for _, sc := range h.sidecars {
		sc.stop()
	}
	var errs []error
	for _, r := range h.replicas {
		errs = append(errs, r.Close())
	}
	if h.ownsDir {
		errs = append(errs, os.RemoveAll(h.dir))
	}
	return errors.Join(errs...)
}
