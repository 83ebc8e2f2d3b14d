package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
		if err := backfillPrometheus(ctx, "Options.PrometheusBackfill", c.opts.PrometheusBackfill, filepath.Join(opts.Dir, "data")); err != nil {
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
// samples with timestamps; what names it in errors) into TSDB blocks in
// dataDir with promtool (promtest.Backfill), while Prometheus is stopped.
// Blocks of up to 31 days: promtool's default 2-hour blocks take minutes to
// write for the weeks of a weekly forecast's history (336 blocks for four
// weeks: 1 min 40 s on 2 busy cores, against 1.3 s in 31-day blocks).
func backfillPrometheus(ctx context.Context, what string, openMetrics []byte, dataDir string) error {
	if !bytes.HasSuffix(bytes.TrimSpace(openMetrics), []byte("# EOF")) {
		return fmt.Errorf("prometheus backfill: %s must end with \"# EOF\" (OpenMetrics)", what)
	}
	if err := promtest.Backfill(ctx, openMetrics, dataDir, promtest.BackfillOptions{MaxBlockDuration: 31 * 24 * time.Hour}); err != nil {
		return fmt.Errorf("prometheus %w", err)
	}
	return nil
}

// BackfillPrometheus writes history (OpenMetrics text ending in "# EOF",
// samples with timestamps older than the cluster's start, so that they do not
// overlap what Prometheus has scraped since) into the running Prometheus:
// it stops Prometheus, writes the blocks into its data directory and starts
// it again, so that queries fail for the few seconds this takes. Unlike
// Options.PrometheusBackfill, the history can depend on when the cluster
// became ready. Not with HAPrometheus.
func (c *Cluster) BackfillPrometheus(ctx context.Context, openMetrics []byte) error {
	if c.opts.HAPrometheus != nil {
		return errors.New("BackfillPrometheus: applies to a single Prometheus, not HAPrometheus")
	}
	t0 := time.Now()
	s := c.Prometheus()
	s.Stop()
	err := backfillPrometheus(ctx, "the history", openMetrics, filepath.Join(c.prometheusOptions().Dir, "data"))
	if rerr := s.Restart(ctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("BackfillPrometheus: %w", rerr))
	}
	if err != nil {
		return fmt.Errorf("BackfillPrometheus: %w", err)
	}
	c.logf("prometheus backfilled and restarted in %v", since(t0))
	return nil
}
