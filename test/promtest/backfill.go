package promtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ErrPromtoolNotInstalled is returned by Backfill when no promtool can be
// found.
var ErrPromtoolNotInstalled = errors.New("promtool not found on PATH or at /usr/bin/promtool (Debian's prometheus package): run hack/install-prometheus.sh")

// BackfillOptions tunes Backfill.
type BackfillOptions struct {
	// MaxBlockDuration is promtool's --max-block-duration, which it parses
	// as a Go duration (0: promtool's default, 2h blocks); longer blocks make long histories faster to
	// write and to open.
	MaxBlockDuration time.Duration
}

// Backfill turns openMetrics (OpenMetrics text whose samples carry
// timestamps, ending in "# EOF") into TSDB blocks in dataDir with
// `promtool tsdb create-blocks-from openmetrics`, as an operator backfills
// history, before a Prometheus opens that directory. promtool comes with
// Debian's Prometheus (hack/install-prometheus.sh).
func Backfill(ctx context.Context, openMetrics []byte, dataDir string, opts BackfillOptions) error {
	if !bytes.HasSuffix(bytes.TrimSpace(openMetrics), []byte("# EOF")) {
		return errors.New("backfill: the OpenMetrics text must end with \"# EOF\"")
	}
	tmp, err := os.MkdirTemp("", "promtest-backfill-")
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "backfill.om")
	if err := os.WriteFile(file, openMetrics, 0o600); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return BackfillFile(ctx, file, dataDir, opts)
}

// BackfillFile is Backfill of the OpenMetrics text in file (for histories
// written as a stream rather than held in memory).
func BackfillFile(ctx context.Context, file, dataDir string, opts BackfillOptions) error {
	promtool, err := findPromtool()
	if err != nil {
		return err
	}
	if opts.MaxBlockDuration < 0 {
		return fmt.Errorf("backfill: MaxBlockDuration %v is negative", opts.MaxBlockDuration)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	args := []string{"tsdb", "create-blocks-from", "openmetrics"}
	if opts.MaxBlockDuration > 0 {
		args = append(args, "--max-block-duration="+opts.MaxBlockDuration.String())
	}
	out, err := exec.CommandContext(ctx, promtool, append(args, file, dataDir)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("backfill: promtool: %w\n%s", err, out)
	}
	return nil
}

// findPromtool is promtool on PATH, else /usr/bin/promtool.
func findPromtool() (string, error) {
	if p, err := exec.LookPath("promtool"); err == nil {
		return p, nil
	}
	if st, err := os.Stat("/usr/bin/promtool"); err == nil && !st.IsDir() {
		return "/usr/bin/promtool", nil
	}
	return "", ErrPromtoolNotInstalled
}
