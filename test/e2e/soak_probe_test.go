package e2e

// The soak's view of the adapter's own /metrics: memory, goroutines and the
// load it put on Prometheus, sampled every second.

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// adapterSample is one reading of the adapter's /metrics.
type adapterSample struct {
	at         time.Time
	rss, heap  float64 // process_resident_memory_bytes, go_memstats_heap_inuse_bytes
	goroutines float64
	// promRequests counts requests to Prometheus (all endpoints and
	// outcomes); dedup the queries answered by another caller's request;
	// onDemand the on-demand discoveries that reached Prometheus.
	promRequests, dedup, onDemand float64
	// reloadsOK and reloadsFailed count rule-file reloads.
	reloadsOK, reloadsFailed float64
}

// adapterProbe reads the adapter's /metrics directly (not through
// kube-apiserver) with the admin client certificate.
type adapterProbe struct {
	client *http.Client
	url    string
	mu     sync.Mutex
	all    []adapterSample
}

func newAdapterProbe() (*adapterProbe, error) {
	tlsCfg, err := rest.TLSConfigFor(env().RESTConfig())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(env().AdapterCA()) {
		return nil, fmt.Errorf("adapter CA holds no certificate")
	}
	tlsCfg.RootCAs, tlsCfg.ServerName = pool, ""
	return &adapterProbe{
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: tlsCfg}},
		url:    env().AdapterURL() + "/metrics",
	}, nil
}

// read takes one sample.
func (p *adapterProbe) read(ctx context.Context) (adapterSample, error) {
	s := adapterSample{at: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return s, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s", p.url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return s, fmt.Errorf("parse /metrics: %w", err)
	}
	sum := func(name string, keep func(labels map[string]string) bool) float64 {
		var v float64
		mf := families[name]
		if mf == nil {
			return 0
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if keep != nil && !keep(labels) {
				continue
			}
			switch {
			case m.GetGauge() != nil:
				v += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				v += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				v += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return v
	}
	s.rss = sum("process_resident_memory_bytes", nil)
	s.heap = sum("go_memstats_heap_inuse_bytes", nil)
	s.goroutines = sum("go_goroutines", nil)
	s.promRequests = sum("ebbflow_adapter_prometheus_request_duration_seconds", nil)
	s.dedup = sum("ebbflow_adapter_prometheus_deduplicated_queries_total", nil)
	s.onDemand = sum("ebbflow_adapter_discovery_on_demand_total", func(l map[string]string) bool {
		return l["result"] == "done" || l["result"] == "error"
	})
	s.reloadsOK = sum("ebbflow_adapter_config_reloads_total", func(l map[string]string) bool { return l["result"] == "success" })
	s.reloadsFailed = sum("ebbflow_adapter_config_reloads_total", func(l map[string]string) bool { return l["result"] == "failure" })
	return s, nil
}

// sample reads every second until ctx ends; failed reads (the adapter is
// busy) are skipped.
func (p *adapterProbe) sample(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if s, err := p.read(ctx); err == nil {
			p.mu.Lock()
			p.all = append(p.all, s)
			p.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maxOf returns the largest value of f over the samples taken in w.
func (p *adapterProbe) maxOf(w window, f func(adapterSample) float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m float64
	for _, s := range p.all {
		if w.contains(s.at) {
			m = max(m, f(s))
		}
	}
	return m
}

// minOf returns the smallest value of f over the samples taken in w (0 when
// none was).
func (p *adapterProbe) minOf(w window, f func(adapterSample) float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, seen := 0.0, false
	for _, s := range p.all {
		if w.contains(s.at) && (!seen || f(s) < m) {
			m, seen = f(s), true
		}
	}
	return m
}

// timeline lists every sample since start, one line each: seconds since
// start, heap in use (MiB) and goroutines, so a peak can be placed against
// the faults' schedule.
func (p *adapterProbe) timeline(start time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	b.WriteString("adapter samples (+s heap-MiB goroutines):")
	for _, s := range p.all {
		fmt.Fprintf(&b, " +%.0f %.0f %.0f;", s.at.Sub(start).Seconds(), s.heap/(1<<20), s.goroutines)
	}
	return b.String() + "\n"
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// heapProfiles writes the adapter's heap profile (/debug/pprof/heap) into
// dir every period until ctx ends, named by the seconds since start, so a
// soak whose heap grew can be explained (EBBFLOW_SOAK_PROFILES).
func (p *adapterProbe) heapProfiles(ctx context.Context, dir string, start time.Time, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := p.heapProfile(ctx, filepath.Join(dir, fmt.Sprintf("heap-%03.0fs.pb.gz", time.Since(start).Seconds()))); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "soak: heap profile: %v\n", err)
		}
	}
}

func (p *adapterProbe) heapProfile(ctx context.Context, file string) error {
	u := strings.TrimSuffix(p.url, "/metrics") + "/debug/pprof/heap"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}
