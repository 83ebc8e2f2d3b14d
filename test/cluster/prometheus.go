package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/ebbflow/ebbflow/test/promtest"
)

// prometheusOptions are the options of the cluster's Prometheus: its targets
// and scrape interval, its data in <dir>/prometheus.
func (c *Cluster) prometheusOptions() promtest.Options {
	return promtest.Options{
		Targets:        c.opts.PrometheusTargets,
		ScrapeInterval: c.opts.ScrapeInterval,
		Retention:      c.opts.PrometheusRetention,
		Dir:            filepath.Join(c.dir, "prometheus"),
	}
}

// startPrometheus starts the cluster's Prometheus with opts, after writing
// Options.PrometheusBackfill into its data directory.
func (c *Cluster) startPrometheus(ctx context.Context, opts promtest.Options) error {
	t0 := time.Now()
	if len(c.opts.PrometheusBackfill) > 0 {
		if err := backfillPrometheus(ctx, c.opts.PrometheusBackfill, filepath.Join(opts.Dir, "data")); err != nil {
			return err
		}
		c.logf("prometheus backfilled in %v", since(t0))
	}
	s, err := promtest.StartProcess(ctx, opts)
	if err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	c.mu.Lock()
	c.prom = s
	c.mu.Unlock()
	c.logf("prometheus ready at %s in %v", s.URL(), since(t0))
	return nil
}

// backfillPrometheus turns openMetrics (OpenMetrics text ending in "# EOF",
// samples with timestamps) into TSDB blocks in dataDir with promtool, before
// Prometheus opens that directory. promtool comes with Prometheus
// (Debian's prometheus package, hack/install-prometheus.sh).
func backfillPrometheus(ctx context.Context, openMetrics []byte, dataDir string) error {
	if !bytes.HasSuffix(bytes.TrimSpace(openMetrics), []byte("# EOF")) {
		return errors.New("prometheus backfill: Options.PrometheusBackfill must end with \"# EOF\" (OpenMetrics)")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		return fmt.Errorf("prometheus backfill: promtool not found (run hack/install-prometheus.sh): %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("prometheus backfill: %w", err)
	}
	file := filepath.Join(filepath.Dir(dataDir), "backfill.om")
	if err := os.WriteFile(file, openMetrics, 0o644); err != nil {
		return fmt.Errorf("prometheus backfill: %w", err)
	}
	cmd := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", file, dataDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("prometheus backfill: promtool: %w\n%s", err, out)
	}
	return nil
}
