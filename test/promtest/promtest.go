// Package promtest runs a real Prometheus server for integration tests and the
// local demo.
//
// A Server is one Prometheus process on a free port of 127.0.0.1 (or of
// another address of this machine, Options.ListenHost) with its own
// configuration, TSDB directory and log file. It scrapes the static targets
// on this machine it is given plus any scrape configs the caller adds
// (Options.ExtraScrapeConfigsYAML, e.g. kubernetes_sd_configs on the real
// node), remote-writes only to the stores on this machine it is given
// (Options.RemoteWrite), and keeps its port and data across Stop and Restart
// so tests can take Prometheus away and bring it back.
//
// The binary is Debian's Prometheus 2 (on PATH or at /usr/bin/prometheus;
// install it with hack/install-prometheus.sh) or, with Options.Prometheus3,
// Prometheus 3 built by hack/build-tools.sh prometheus3.
//
// Backfill writes history (OpenMetrics text with timestamps) into a data
// directory with promtool before a Server opens it, as an operator
// backfills; the tests that need history all backfill through it.
package promtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/ebbflow/ebbflow/test/proc"
)

// ErrNotInstalled is returned when no prometheus binary can be found.
var ErrNotInstalled = errors.New("prometheus binary not found on PATH or at /usr/bin/prometheus: run hack/install-prometheus.sh")

// startAttempts bounds how often a fresh free port is tried when another
// process takes the chosen port between probing and binding.
const startAttempts = 5

// Options configure a Server. The zero value is usable: no targets, 1s scrape
// interval, a temporary directory.
type Options struct {
	// Targets are scraped from the start. See Server.SetTargets to change them.
	Targets []Target
	// ScrapeInterval is the global scrape and rule-evaluation interval;
	// default 1s. The scrape timeout is min(ScrapeInterval, 10s).
	ScrapeInterval time.Duration
	// LookbackDelta is --query.lookback-delta; default 5m, as in Prometheus.
	// Lower it to make vanished series disappear from instant queries sooner.
	LookbackDelta time.Duration
	// RulesYAML, if set, is written to a rule file and loaded (recording or
	// alerting rule groups in Prometheus rule-file syntax).
	RulesYAML string
	// Dir holds the config, TSDB and log. Empty means a new temporary
	// directory that Close removes; a given Dir is never removed.
	Dir string
	// Binary overrides the prometheus binary lookup (also with Prometheus3).
	Binary string
	// Prometheus3 runs Prometheus 3 built from the Go module proxy, located
	// (and built on first use, minutes) by hack/build-tools.sh --print-paths
	// prometheus3, instead of Debian's Prometheus 2.42. Only Prometheus 3 has
	// kubernetes_sd_configs.
	Prometheus3 bool
	// ExtraScrapeConfigsYAML is a YAML sequence of scrape_configs entries,
	// appended verbatim (after removing the indentation common to all its
	// lines) to the generated ones. Each entry needs a job_name not used by
	// Targets. It is checked to be such a sequence before Prometheus starts;
	// Prometheus validates the entries themselves. Targets it discovers are
	// not restricted to this machine by promtest: the caller answers for them.
	ExtraScrapeConfigsYAML string
	// ListenHost is the IP address Prometheus listens on; default 127.0.0.1.
	// It must be a loopback address or an address of an interface of this
	// machine (such as the real node's bridge gateway, so pods can reach
	// Prometheus); anything else is refused.
	ListenHost string
	// ReadyTimeout bounds each wait for /-/ready after a (re)start; default 30s.
	ReadyTimeout time.Duration
	// StopTimeout bounds the graceful part of Stop before SIGKILL; default 10s.
	StopTimeout time.Duration
	// Retention is the TSDB retention; default one day (backfill older
	// history with a longer one).
	Retention time.Duration
	// ExtraArgs are appended to the Prometheus command line.
	ExtraArgs []string
	// RemoteWrite are the stores on this machine that Prometheus sends its
	// samples to (remote_write, sent within a second, retried quickly).
	// Debian's Prometheus 2.42 drops a destination's Headers (seen: no
	// X-Scope-OrgID reached the store); use Prometheus3 with headers.
	RemoteWrite []RemoteWrite
	// ExternalLabels are the global external_labels (e.g. the replica label of
	// a highly available pair behind Thanos).
	ExternalLabels map[string]string
}

func (o Options) withDefaults() Options {
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	if o.LookbackDelta <= 0 {
		o.LookbackDelta = 5 * time.Minute
	}
	if o.Retention <= 0 {
		o.Retention = 24 * time.Hour
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 30 * time.Second
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 10 * time.Second
	}
	if o.ListenHost == "" {
		o.ListenHost = "127.0.0.1"
	}
	return o
}

// Server is a Prometheus process managed by this package. Its methods are safe
// for concurrent use.
type Server struct {
	opts    Options
	bin     string
	dir     string
	ownsDir bool
	dataDir string
	files   configFiles
	logPath string
	addr    string // fixed for the Server's lifetime
	http    *http.Client
	api     v1.API

	mu         sync.Mutex
	proc       *proc.Process // nil while stopped
	targets    []Target
	readyAfter time.Duration
	closed     bool
}

// Start starts Prometheus for a test and returns once it is ready. It fails
// the test if Prometheus is not installed ("run hack/install-prometheus.sh")
// or does not become ready. The server lives in t.TempDir() unless opts.Dir is
// set; a t.Cleanup stops it (also when the test fails or panics) and, if the
// test failed, logs the tail of the Prometheus log.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := StartProcess(context.Background(), opts)
	if err != nil {
		t.Fatalf("promtest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("promtest: tail of %s:\n%s", s.LogPath(), s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			t.Errorf("promtest: %v", err)
		}
	})
	t.Logf("promtest: prometheus at %s ready after %v", s.URL(), s.ReadyAfter())
	return s
}

// StartProcess starts Prometheus and returns once /-/ready answers, or an
// error (wrapping ErrNotInstalled if the binary is missing). ctx bounds only
// the startup; the process runs until Stop or Close, which the caller must
// call. If the chosen free port is taken before Prometheus binds it, another
// port is tried.
func StartProcess(ctx context.Context, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := checkLocalHost(opts.ListenHost); err != nil {
		return nil, fmt.Errorf("listen host: %w", err)
	}
	if _, err := parseExtraScrapeConfigs(opts.ExtraScrapeConfigsYAML); err != nil {
		return nil, err
	}
	bin, err := findBinary(ctx, opts.Binary, opts.Prometheus3)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts:    opts,
		bin:     bin,
		dir:     opts.Dir,
		targets: append([]Target(nil), opts.Targets...),
		// Loopback only: never route through a proxy from the environment.
		http: &http.Client{Transport: &http.Transport{Proxy: nil}},
	}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "promtest-"); err != nil {
			return nil, fmt.Errorf("create server directory: %w", err)
		}
		s.ownsDir = true
	}
	if s.dir, err = filepath.Abs(s.dir); err != nil {
		return nil, fmt.Errorf("server directory: %w", err)
	}
	s.dataDir = filepath.Join(s.dir, "data")
	s.files = configFiles{config: filepath.Join(s.dir, "prometheus.yml"), rules: filepath.Join(s.dir, "rules.yml")}
	s.logPath = filepath.Join(s.dir, "prometheus.log")

	if err := s.startFresh(ctx); err != nil {
		if s.ownsDir {
			_ = os.RemoveAll(s.dir)
		}
		return nil, err
	}
	return s, nil
}

// startFresh writes the configuration and launches Prometheus on a free port.
func (s *Server) startFresh(ctx context.Context) error {
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := writeConfig(s.files, s.opts, s.targets); err != nil {
		return err
	}
	var lastErr error
	for range startAttempts {
		port, err := proc.FreePort()
		if err != nil {
			return err
		}
		s.addr = listenAddr(s.opts.ListenHost, port)
		client, err := api.NewClient(api.Config{Address: s.URL(), Client: s.http})
		if err != nil {
			return fmt.Errorf("create api client: %w", err)
		}
		s.api = v1.NewAPI(client)
		p, d, err := s.launch(ctx)
		if errors.Is(err, errAddrInUse) {
			lastErr = err
			continue
		}
		if err != nil {
			return err
		}
		s.proc, s.readyAfter = p, d
		return nil
	}
	return fmt.Errorf("no free port after %d attempts: %w", startAttempts, lastErr)
}

// URL returns the base URL, e.g. http://127.0.0.1:43121 (the host is
// Options.ListenHost). It does not change
// across Stop and Restart.
func (s *Server) URL() string { return "http://" + s.addr }

// Addr returns the host:port Prometheus listens on.
func (s *Server) Addr() string { return s.addr }

// ConfigPath returns the path of the Prometheus configuration file. It is
// rewritten (atomically) by SetTargets; callers should only read it.
func (s *Server) ConfigPath() string { return s.files.config }

// Binary returns the path of the Prometheus binary the server runs.
func (s *Server) Binary() string { return s.bin }

// Dir returns the directory holding the config, data and log.
func (s *Server) Dir() string { return s.dir }

// LogPath returns the path of the Prometheus log file.
func (s *Server) LogPath() string { return s.logPath }

// ReadyAfter returns how long the last (re)start took until /-/ready
// answered 200.
func (s *Server) ReadyAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyAfter
}

// Running reports whether the Prometheus process is started and not yet
// stopped by this package. A process that crashed by itself still counts.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// Stop shuts Prometheus down gracefully (SIGTERM to its process group), then
// kills it after Options.StopTimeout. It returns once the process is gone and
// is a no-op when already stopped. Data and port are kept for Restart.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Stop(s.opts.StopTimeout)
		s.proc = nil
	}
}

// Kill stops Prometheus with SIGKILL, like a crash: no clean TSDB shutdown.
// Data written to the WAL survives and is replayed by Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Kill()
		<-s.proc.Done()
		s.proc = nil
	}
}

// Restart stops Prometheus if it runs and starts it again on the same port
// with the same data directory and current targets, returning once it is
// ready. If the port is briefly still in use it retries until ctx is done or
// the ready timeout passes. It fails after Close.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("restart prometheus: server is closed")
	}
	if s.proc != nil {
		s.proc.Stop(s.opts.StopTimeout)
		s.proc = nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	for {
		p, d, err := s.launch(ctx)
		if err == nil {
			s.proc, s.readyAfter = p, d
			return nil
		}
		if !errors.Is(err, errAddrInUse) {
			return fmt.Errorf("restart prometheus: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart prometheus: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// SetTargets replaces the scrape targets. A running Prometheus reloads its
// configuration (POST /-/reload) before SetTargets returns; a stopped one
// picks them up on Restart. Prometheus 2.x applies discovery changes in 5s
// batches, so new targets may take up to about 5s to be first scraped.
func (s *Server) SetTargets(ctx context.Context, targets []Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := writeConfig(s.files, s.opts, targets); err != nil {
		return err
	}
	s.targets = append([]Target(nil), targets...)
	if s.proc == nil {
		return nil
	}
	return s.reload(ctx)
}

// Close stops Prometheus and removes the directory if StartProcess created it.
// It is idempotent. After Close the Server cannot be restarted.
func (s *Server) Close() error {
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.http.CloseIdleConnections()
	if s.ownsDir {
		if err := os.RemoveAll(s.dir); err != nil {
			return fmt.Errorf("remove server directory: %w", err)
		}
	}
	return nil
}
