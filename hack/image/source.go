package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// sourceURL is the org.opencontainers.image.source label.
const sourceURL = "https://github.com/ebbflow/ebbflow"

// source is what the images record about the code they were built from.
type source struct {
	Version  string    // the tag
	Revision string    // commit hash, "-dirty" appended if tracked files changed
	Created  time.Time // SOURCE_DATE_EPOCH, else the commit time
}

// readSource finds the revision and creation time of the checkout in dir.
// SOURCE_DATE_EPOCH (seconds) overrides the commit time; without git and
// without it the time is the Unix epoch, so the output stays reproducible.
func readSource(ctx context.Context, dir, tag string) (source, error) {
	s := source{Version: tag, Revision: "unknown", Created: time.Unix(0, 0).UTC()}
	if rev, err := git(ctx, dir, "rev-parse", "HEAD"); err == nil {
		s.Revision = rev
		if status, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=no"); err == nil && status != "" {
			s.Revision += "-dirty"
		}
		if ct, err := git(ctx, dir, "log", "-1", "--format=%ct", "HEAD"); err == nil {
			if sec, err := strconv.ParseInt(ct, 10, 64); err == nil {
				s.Created = time.Unix(sec, 0).UTC()
			}
		}
	}
	if v, ok := os.LookupEnv("SOURCE_DATE_EPOCH"); ok && v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec < 0 {
			return source{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", v)
		}
		s.Created = time.Unix(sec, 0).UTC()
	}
	return s, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(exit.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// chartAppVersion reads appVersion from the chart in dir: the default tag,
// so that the chart's default image references name what `make image` built.
func chartAppVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, chartFile))
	if err != nil {
		return "", err
	}
	var chart struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return "", fmt.Errorf("%s: %w", chartFile, err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("%s has no appVersion", chartFile)
	}
	return chart.AppVersion, nil
}
