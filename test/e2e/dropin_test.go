package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// dropInScenarios are the scenarios replayed in drop-in mode.
var dropInScenarios = []string{"ramp", "missing-metric", "behavior", "scale-to-zero"}

// startDropIn starts a second cluster whose kube-controller-manager runs
// without its HPA controller (--controllers=...,-horizontalpodautoscaling),
// with its own exporter and Prometheus, and ebbflow-autoscaler with
// --hpa-mode=all reconciling plain HorizontalPodAutoscalers. TestDifferential
// plays dropInScenarios there on a plain HPA and requires the sequence
// kube-controller-manager's HPA produced for the same trajectory in the
// shared cluster (same comparison and tolerance). Everything stops in
// t.Cleanup. Safe to call from a goroutine of the test.
func startDropIn(t *testing.T, ctx context.Context) (diffEnv, error) {
	e := exporter.New()
	if err := e.Listen(""); err != nil {
		return diffEnv{}, fmt.Errorf("exporter: %w", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	// Series of both metric names exist before the adapter's first
	// discovery.
	e.SetGauge(QueueGauge, map[string]string{"queue": "dropin-seed"}, 0)
	e.SetGauge(InflightGauge, map[string]string{"namespace": "dropin-seed", "pod": "seed", "service": "seed"}, 0)
	opts := cluster.Options{
		RulesYAML:            []byte(rulesYAML),
		PrometheusTargets:    []promtest.Target{{Addr: e.Addr(), Job: "dropin", HonorLabels: true}},
		DisableHPAController: true,
		HPASyncPeriod:        diffSyncPeriod,
	}
	if testing.Verbose() {
		opts.Log = os.Stdout
	}
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return diffEnv{}, err
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drop-in cluster logs:\n%s", c.DumpLogs(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("drop-in cluster: %v", err)
		}
	})
	if err := c.StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "all", Args: []string{"--v=2"}}); err != nil {
		return diffEnv{}, fmt.Errorf("start ebbflow-autoscaler --hpa-mode=all: %w", err)
	}
	return diffEnv{c: c, e: e}, nil
}
