package cluster

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/thanostest"
)

// HAPrometheus configures the optional highly available Prometheus: replicas
// that scrape the same targets, each with a distinct `replica` external label
// and a Thanos sidecar, behind Thanos Query, which deduplicates on `replica`
// and is what ebbflow-adapter queries (package thanostest; the thanos binary
// is built by hack/build-tools.sh thanos).
type HAPrometheus struct {
	// Replicas is the number of Prometheus replicas (default 2).
	Replicas int
	// ExternalLabels are further external labels of every replica.
	ExternalLabels map[string]string
	// QueryArgs are appended to Thanos Query's command line (e.g. tenancy).
	QueryArgs []string
	// URLQuery is the query string of the adapter's --prometheus-url, e.g.
	// "partial_response=true" so that a lost replica fails no request.
	URLQuery string
}

// startHAPrometheus starts the replicas, sidecars and Thanos Query in
// <dir>/thanos. Prometheus() then returns replica 0.
func (c *Cluster) startHAPrometheus(ctx context.Context) error {
	bin, err := buildtools.Path(ctx, c.opts.Log, "thanos")
	if err != nil {
		return err
	}
	o := c.opts.HAPrometheus
	h, err := thanostest.Start(ctx, thanostest.Options{
		Thanos:         bin,
		Replicas:       o.Replicas,
		ExternalLabels: o.ExternalLabels,
		QueryArgs:      o.QueryArgs,
		Targets:        c.opts.PrometheusTargets,
		ScrapeInterval: c.opts.ScrapeInterval,
		Dir:            filepath.Join(c.dir, "thanos"),
	})
	if err != nil {
		return fmt.Errorf("highly available prometheus: %w", err)
	}
	c.mu.Lock()
	c.ha, c.prom = h, h.Replica(0)
	c.mu.Unlock()
	c.logf("%d prometheus replicas behind thanos query at %s", h.Replicas(), h.QueryURL())
	return nil
}

// HA returns the highly available Prometheus (Options.HAPrometheus), or nil.
// Kill or restart its replicas to simulate the loss of one.
func (c *Cluster) HA() *thanostest.HA {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ha
}

// prometheusURL is the URL the adapter queries: Thanos Query in HA mode,
// else the single Prometheus.
func (c *Cluster) prometheusURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ha != nil {
		if q := c.opts.HAPrometheus.URLQuery; q != "" {
			return c.ha.QueryURL() + "/?" + q
		}
		return c.ha.QueryURL()
	}
	return c.prom.URL()
}
