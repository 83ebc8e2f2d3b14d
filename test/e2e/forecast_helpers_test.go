package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// startForecastCluster starts a forecast e2e's own cluster (one node, its
// Prometheus scraping the exporter at addr as job, with honor_labels) and
// ebbflow-autoscaler on it, and returns the cluster and an Ebbflow client.
// opts sets the rest (rules, retention, backfill, HPA sync period); all
// stops in t.Cleanup.
func startForecastCluster(t *testing.T, addr, job string, opts cluster.Options) (*cluster.Cluster, ebbclient.Interface) {
	t.Helper()
	opts.Nodes = 1
	opts.PrometheusTargets = []promtest.Target{{Addr: addr, Job: job, HonorLabels: true}}
	opts.Log = testLog{t}
	c := cluster.StartT(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.StartAutoscaler(ctx, cluster.AutoscalerOptions{Args: []string{"--v=2"}}); err != nil {
		t.Fatalf("start ebbflow-autoscaler: %v", err)
	}
	ebb, err := ebbclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c, ebb
}

// queueHistory is the forecast queue's history in OpenMetrics text: one
// sample every step from `from` up to until (both truncated to step), with
// load's value at each sample's time. The forecast e2es backfill it into
// their cluster's Prometheus.
func queueHistory(from, until time.Time, step time.Duration, load func(time.Time) float64) []byte {
	var b strings.Builder
	b.WriteString("# TYPE " + QueueGauge + " gauge\n")
	l := forecastLabels()
	series := fmt.Sprintf(`%s{instance=%q,job=%q,queue=%q}`, QueueGauge, l["instance"], l["job"], l["queue"])
	for ts := from.Truncate(step); !ts.After(until); ts = ts.Add(step) {
		fmt.Fprintf(&b, "%s %g %d\n", series, load(ts), ts.Unix())
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// checkForecastWrite checks that who's first /scale write above
// forecastMin, at w, came at least lead − one sync period before the ramp,
// and not before the horizon (ramp − lead: before it, the forecast could
// not have seen the ramp).
func checkForecastWrite(t *testing.T, who string, w, ramp, horizon time.Time, lead time.Duration) {
	t.Helper()
	ahead := ramp.Sub(w)
	t.Logf("%s scaled above %d at %s, %.1f s before the ramp (lead %v, sync period %v)",
		who, forecastMin, w.Format("15:04:05.000"), ahead.Seconds(), lead, forecastPeriod)
	if ahead < lead-forecastPeriod {
		t.Errorf("%s scaled %.1f s before the ramp, want at least lead − one sync period = %v", who, ahead.Seconds(), lead-forecastPeriod)
	}
	if w.Before(horizon) {
		t.Errorf("%s scaled at %s, before now+lead reached the ramp (%s): not the forecast's doing",
			who, w.Format("15:04:05.000"), horizon.Format("15:04:05.000"))
	}
}
