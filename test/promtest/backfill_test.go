package promtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBackfill: promtool turns OpenMetrics text into at least one TSDB
// block (a directory with meta.json) in the data directory, with long
// blocks when asked; text without "# EOF", a negative block duration and
// samples promtool rejects are errors saying so.
func TestBackfill(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	b.WriteString("# TYPE queue gauge\n")
	for i := range 3 * 24 * 60 / 5 {
		b.WriteString("queue{q=\"a\"} 7 " + itoa(start.Add(time.Duration(i)*5*time.Minute).Unix()) + "\n")
	}
	b.WriteString("# EOF\n")
	blocks := func(dir string) int {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "meta.json")); err == nil {
				n++
			}
		}
		return n
	}
	short, long := filepath.Join(t.TempDir(), "data"), filepath.Join(t.TempDir(), "data")
	if err := Backfill(ctx, []byte(b.String()), short, BackfillOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Backfill(ctx, []byte(b.String()), long, BackfillOptions{MaxBlockDuration: 31 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// Three days: promtool's default 2h blocks give several, 31-day blocks
	// fewer.
	if s, l := blocks(short), blocks(long); s < 2 || l < 1 || l >= s {
		t.Errorf("blocks: %d with the default duration, %d with 31 days; want several, then fewer", s, l)
	}
	for name, c := range map[string]struct {
		text string
		opts BackfillOptions
		want string
	}{
		"no EOF":   {"queue 1 1700000000\n", BackfillOptions{}, `must end with "# EOF"`},
		"negative": {"# EOF\n", BackfillOptions{MaxBlockDuration: -time.Hour}, "MaxBlockDuration"},
		"garbage":  {"queue{ 1 1700000000\n# EOF\n", BackfillOptions{}, "promtool"},
	} {
		err := Backfill(ctx, []byte(c.text), filepath.Join(t.TempDir(), "data"), c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
