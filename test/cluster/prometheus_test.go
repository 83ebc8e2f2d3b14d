package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestPrometheusBackfillLongBlocks: 29 days of history become a few TSDB
// blocks (31-day blocks; promtool made 3 here), not promtool's default 348
// two-hour blocks, which took minutes to write.
func TestPrometheusBackfillLongBlocks(t *testing.T) {
	var b strings.Builder
	b.WriteString("# TYPE q gauge\n")
	end := time.Now().Truncate(time.Hour)
	for ts := end.Add(-29 * 24 * time.Hour); !ts.After(end); ts = ts.Add(5 * time.Minute) {
		fmt.Fprintf(&b, "q 1 %d\n", ts.Unix())
	}
	b.WriteString("# EOF\n")
	dir := filepath.Join(t.TempDir(), "data")
	if err := backfillPrometheus(context.Background(), "the history", []byte(b.String()), dir); err != nil {
		t.Fatal(err)
	}
	blocks, err := filepath.Glob(filepath.Join(dir, "*", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 || len(blocks) > 4 {
		t.Errorf("29 days backfilled into %d blocks, want 1 to 4", len(blocks))
	}
}
