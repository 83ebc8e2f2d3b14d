package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusBackfillRefused: a backfill that is not OpenMetrics text
// ending in "# EOF", or one given with HAPrometheus, is refused naming the
// option before anything starts.
func TestPrometheusBackfillRefused(t *testing.T) {
	err := backfillPrometheus(context.Background(), "Options.PrometheusBackfill", []byte("queue 1 1700000000\n"), filepath.Join(t.TempDir(), "data"))
	if err == nil || !strings.Contains(err.Error(), "Options.PrometheusBackfill") {
		t.Errorf("backfill without # EOF: %v, want an error naming Options.PrometheusBackfill", err)
	}
	_, err = Start(context.Background(), Options{RulesYAML: []byte("externalRules: []\n"), HAPrometheus: &HAPrometheus{},
		PrometheusBackfill: []byte("# EOF\n")})
	if err == nil || !strings.Contains(err.Error(), "PrometheusBackfill") {
		t.Errorf("backfill with HAPrometheus: %v, want an error naming PrometheusBackfill", err)
	}
}
