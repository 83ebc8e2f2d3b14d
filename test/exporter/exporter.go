// Package exporter is a controllable, in-process Prometheus exporter for
// integration tests and the demo.
//
// An Exporter serves the Prometheus text format from its own registry (no
// global state) on a loopback address. Tests set gauges, add to counters and
// delete series at any time, including metric names that first appear after
// Prometheus has started scraping.
//
// Each metric name has a fixed kind (gauge or counter) and a fixed set of label
// names, chosen by its first use; different metric names may use different
// label names. Breaking either rule is a programmer error and panics, like
// client_golang's With on a label-cardinality mismatch.
package exporter

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// kind is the Prometheus metric type of one metric name.
type kind string

const (
	kindGauge   kind = "gauge"
	kindCounter kind = "counter"
)

// family is one metric name: its kind, fixed label names and collector.
type family struct {
	kind       kind
	labelNames []string // sorted
	gauge      *prometheus.GaugeVec
	counter    *prometheus.CounterVec
}

func (f *family) collector() prometheus.Collector {
	if f.kind == kindGauge {
		return f.gauge
	}
	return f.counter
}

// Exporter is a controllable metrics endpoint. The zero value is not usable;
// create one with New. All methods are safe for concurrent use.
type Exporter struct {
	reg *prometheus.Registry

	mu       sync.Mutex
	families map[string]*family
	srv      *http.Server
	ln       net.Listener
	serveErr chan error
}

// New returns an Exporter with an empty registry that is not yet serving.
// Series may be set before or after Listen or Start.
func New() *Exporter {
	return &Exporter{
		reg:      prometheus.NewRegistry(),
		families: make(map[string]*family),
	}
}

// Handler returns the HTTP handler serving the exporter's registry in the
// Prometheus exposition formats. It is usable without Listen.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// Start serves the exporter on a free 127.0.0.1 port and registers Close with
// t.Cleanup. It fails the test if the listener cannot be opened.
func (e *Exporter) Start(t testing.TB) {
	t.Helper()
	if err := e.Listen(""); err != nil {
		t.Fatalf("exporter: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("exporter: %v", err)
		}
	})
}

// Listen starts serving /metrics on addr in the background. An empty addr
// means a free port on 127.0.0.1. Only loopback addresses are accepted, so a
// test exporter is never reachable from the network. The caller must call
// Close. Listen fails if the exporter is already serving.
func (e *Exporter) Listen(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if err := checkLoopback(addr); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ln != nil {
		return errors.New("exporter is already listening")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.Handler())
	e.ln = ln
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	e.serveErr = make(chan error, 1)
	go func(srv *http.Server, errc chan<- error) {
		errc <- srv.Serve(ln)
	}(e.srv, e.serveErr)
	return nil
}

// Close stops serving and waits for the server goroutine to return. Series are
// kept; Listen may be called again. Close on an exporter that is not serving is
// a no-op.
func (e *Exporter) Close() error {
	e.mu.Lock()
	srv, errc := e.srv, e.serveErr
	e.srv, e.ln, e.serveErr = nil, nil, nil
	e.mu.Unlock()
	if srv == nil {
		return nil
	}
	closeErr := srv.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	if closeErr != nil {
		return fmt.Errorf("close server: %w", closeErr)
	}
	return nil
}

// Addr returns the host:port the exporter listens on, suitable as a
// promtest.Target address, or "" if it is not listening.
func (e *Exporter) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ln == nil {
		return ""
	}
	return e.ln.Addr().String()
}

// URL returns the full metrics URL (http://host:port/metrics), or "" if the
// exporter is not listening.
func (e *Exporter) URL() string {
	addr := e.Addr()
	if addr == "" {
		return ""
	}
	return "http://" + addr + "/metrics"
}

// SetGauge sets the gauge series name{labels} to v, creating the metric and the
// series as needed. It panics if name is not a valid metric name, is already a
// counter, or was first used with different label names.
func (e *Exporter) SetGauge(name string, labels map[string]string, v float64) {
	f := e.family(name, kindGauge, labels)
	f.gauge.With(prometheus.Labels(labels)).Set(v)
}

// AddCounter adds delta (which must be >= 0) to the counter series
// name{labels}, creating the metric and the series (starting at 0) as needed.
// It panics on a negative delta and under the same conditions as SetGauge.
func (e *Exporter) AddCounter(name string, labels map[string]string, delta float64) {
	if delta < 0 {
		panic(fmt.Sprintf("exporter: counter %q: negative delta %v", name, delta))
	}
	f := e.family(name, kindCounter, labels)
	f.counter.With(prometheus.Labels(labels)).Add(delta)
}

// Delete removes the series name{labels} from the exposition and reports
// whether it existed. A later SetGauge or AddCounter recreates it (a counter
// restarts from zero, like a restarted pod).
func (e *Exporter) Delete(name string, labels map[string]string) bool {
	e.mu.Lock()
	f, ok := e.families[name]
	e.mu.Unlock()
	if !ok {
		return false
	}
	if f.kind == kindGauge {
		return f.gauge.Delete(prometheus.Labels(labels))
	}
	return f.counter.Delete(prometheus.Labels(labels))
}

// Unregister removes the metric name with all its series and reports whether
// it existed. The name may then be reused with either kind, but only with the
// label names of its first use: the registry keeps them for its lifetime.
func (e *Exporter) Unregister(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	f, ok := e.families[name]
	if !ok {
		return false
	}
	delete(e.families, name)
	return e.reg.Unregister(f.collector())
}

// family returns the metric family for name, registering it on first use.
// Names are checked against the legacy (pre-UTF-8) rules, which every
// Prometheus 2.x server can scrape.
func (e *Exporter) family(name string, k kind, labels map[string]string) *family {
	if !model.LegacyValidation.IsValidMetricName(name) {
		panic(fmt.Sprintf("exporter: invalid metric name %q", name))
	}
	names := make([]string, 0, len(labels))
	for l := range labels {
		if !model.LegacyValidation.IsValidLabelName(l) || strings.HasPrefix(l, model.ReservedLabelPrefix) {
			panic(fmt.Sprintf("exporter: metric %q: invalid label name %q", name, l))
		}
		names = append(names, l)
	}
	slices.Sort(names)

	e.mu.Lock()
	defer e.mu.Unlock()
	if f, ok := e.families[name]; ok {
		if f.kind != k {
			panic(fmt.Sprintf("exporter: metric %q is a %s, not a %s", name, f.kind, k))
		}
		if !slices.Equal(f.labelNames, names) {
			panic(fmt.Sprintf("exporter: metric %q has label names [%s], got [%s]",
				name, strings.Join(f.labelNames, ","), strings.Join(names, ",")))
		}
		return f
	}

	f := &family{kind: k, labelNames: names}
	// The help text must not depend on the kind, or the name could not be
	// re-registered as the other kind after Unregister.
	help := "Set by the ebbflow test exporter."
	if k == kindGauge {
		f.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, names)
	} else {
		f.counter = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, names)
	}
	if err := e.reg.Register(f.collector()); err != nil {
		panic(fmt.Sprintf("exporter: register metric %q: %v", name, err))
	}
	e.families[name] = f
	return f
}

// checkLoopback returns an error unless addr's host is a loopback IP or
// "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("parse address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("address %q is not a loopback address", addr)
}
