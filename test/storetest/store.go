// Package storetest runs the metric stores users grow into beyond one
// Prometheus — Grafana Mimir in monolithic mode and VictoriaMetrics
// single-node — as real processes on loopback, for the tests that put
// ebbflow-adapter in front of them. Each store is fed the way users feed it:
// a real Prometheus (package promtest) remote-writes what it scrapes; history
// older than the Prometheus is pushed with the same remote-write protocol
// (Push).
//
// The binaries come from hack/build-tools.sh (tools "mimir" and
// "victoria-metrics"), pinned in hack/tools/.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ebbflow/ebbflow/test/proc"
)

// Bounds of a store's life cycle.
const (
	stopGrace     = 15 * time.Second
	startAttempts = 5
	pollInterval  = 100 * time.Millisecond
)

// loopback is an HTTP client that never goes through a proxy.
var loopback = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 10 * time.Second}

// Kind names a store.
type Kind string

const (
	// Mimir is Grafana Mimir, one process running every component (-target=all).
	Mimir Kind = "mimir"
	// VictoriaMetrics is VictoriaMetrics single-node.
	VictoriaMetrics Kind = "victoria-metrics"
)

// Options configure a store.
type Options struct {
	// Binary is the store's executable. Required.
	Binary string
	// Dir holds the store's data, configuration and log. Required; kept
	// across Kill and Restart.
	Dir string
	// Tenant is Mimir's tenant (X-Scope-OrgID) that writes and reads carry;
	// default "ebbflow". VictoriaMetrics single-node has no tenants.
	Tenant string
	// ReadyTimeout bounds each start until the store answers ready; default 90s.
	ReadyTimeout time.Duration
	// ExtraArgs are appended to the store's command line (Mimir's flags
	// override its configuration file).
	ExtraArgs []string
}

// Store is a running store. Its methods are safe for concurrent use.
type Store struct {
	kind    Kind
	opts    Options
	logPath string
	args    func(ports [3]int) ([]string, error) // HTTP, gRPC, gossip
	ready   string                               // path answering 200 once the store takes reads and writes

	mu        sync.Mutex
	ports     [3]int // HTTP first
	proc      *proc.Process
	readyTook time.Duration
	closed    bool
}

// Kind is the store's kind.
func (s *Store) Kind() Kind { return s.kind }

// addr is the store's HTTP host:port.
func (s *Store) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.ports[0]))
}

// QueryURL is the base URL of the store's Prometheus-compatible HTTP API
// (what --prometheus-url takes): Mimir's under /prometheus, VictoriaMetrics'
// at the root.
func (s *Store) QueryURL() string {
	if s.kind == Mimir {
		return "http://" + s.addr() + "/prometheus"
	}
	return "http://" + s.addr()
}

// WriteURL is the store's remote-write endpoint.
func (s *Store) WriteURL() string {
	if s.kind == Mimir {
		return "http://" + s.addr() + "/api/v1/push"
	}
	return "http://" + s.addr() + "/api/v1/write"
}

// Headers are the headers every read and write carries: Mimir's tenant.
func (s *Store) Headers() map[string]string {
	if s.kind == Mimir {
		return map[string]string{"X-Scope-OrgID": s.opts.Tenant}
	}
	return nil
}

// ReadyAfter is how long the last (re)start took until the store was ready.
func (s *Store) ReadyAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyTook
}

// LogPath is the store's log file (all its runs).
func (s *Store) LogPath() string { return s.logPath }

// start launches the store on free ports (fresh ones when a port was taken
// meanwhile) and waits until it is ready.
func (s *Store) start(ctx context.Context) error {
	return proc.RetryAddrInUse(startAttempts, func() error {
		ports, err := proc.FreePorts(3)
		if err != nil {
			return err
		}
		s.mu.Lock()
		copy(s.ports[:], ports)
		s.mu.Unlock()
		return s.launch(ctx)
	})
}

// launch starts the process on the current ports and waits until its ready
// path answers 200 (proc.LaunchReady).
func (s *Store) launch(ctx context.Context) error {
	s.mu.Lock()
	ports := s.ports
	s.mu.Unlock()
	args, err := s.args(ports)
	if err != nil {
		return err
	}
	args = append(args, s.opts.ExtraArgs...)
	begin := time.Now()
	url := "http://" + s.addr() + s.ready
	p, err := proc.LaunchReady(ctx, proc.Spec{Harness: "storetest", Name: string(s.kind), Bin: s.opts.Binary, Args: args, Dir: s.opts.Dir, LogPath: s.logPath},
		pollInterval, s.opts.ReadyTimeout, func(ctx context.Context) bool { return proc.Probe(ctx, url) })
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc, s.readyTook = p, time.Since(begin)
	s.mu.Unlock()
	return nil
}

// Kill ends the store with SIGKILL, like a crash. Its data stays for Restart.
func (s *Store) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Kill()
		<-s.proc.Done()
		s.proc = nil
	}
}

// Restart starts a stopped or killed store again on the same ports with the
// same data and returns once it is ready; a running one is stopped first.
func (s *Store) Restart(ctx context.Context) error {
	s.Stop()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("restart: store is closed")
	}
	deadline := time.Now().Add(s.opts.ReadyTimeout)
	for {
		err := s.launch(ctx)
		if !errors.Is(err, proc.ErrAddrInUse) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop ends the store gracefully (SIGTERM, SIGKILL after a grace period).
func (s *Store) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Stop(stopGrace)
		s.proc = nil
	}
}

// Close stops the store for good. It is idempotent.
func (s *Store) Close() {
	s.Stop()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// LogTail returns up to the last n lines of the store's log.
func (s *Store) LogTail(n int) string { return proc.LogTail(s.logPath, n) }

// Start starts a store of kind k and returns once it is ready. ctx bounds
// only the start-up; the caller must Close the store.
func Start(ctx context.Context, k Kind, opts Options) (*Store, error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, errors.New("storetest: Options.Binary and Options.Dir are required")
	}
	if opts.Tenant == "" {
		opts.Tenant = "ebbflow"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 90 * time.Second
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("storetest: %w", err)
	}
	s := &Store{kind: k, opts: opts, logPath: filepath.Join(opts.Dir, string(k)+".log")}
	switch k {
	case Mimir:
		s.args, s.ready = s.mimirArgs, "/ready"
	case VictoriaMetrics:
		s.args, s.ready = s.victoriaMetricsArgs, "/health"
	default:
		return nil, fmt.Errorf("storetest: unknown store %q", k)
	}
	if err := s.start(ctx); err != nil {
		return nil, fmt.Errorf("storetest: %w", err)
	}
	return s, nil
}
