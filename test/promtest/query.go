package promtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

const (
	// defaultWaitTimeout bounds the Wait* helpers when ctx has no deadline.
	defaultWaitTimeout = 30 * time.Second
	// pollInterval is the pause between polls of the Wait* helpers.
	pollInterval = 200 * time.Millisecond
)

// API returns a client for this server's HTTP API. It stays valid across Stop
// and Restart (calls fail while Prometheus is stopped).
func (s *Server) API() v1.API { return s.api }

// Query evaluates an instant query at the current time. Warnings are
// returned as an error only if the query produced no result.
func (s *Server) Query(ctx context.Context, query string) (model.Value, error) {
	v, warnings, err := s.api.Query(ctx, query, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	if v == nil && len(warnings) > 0 {
		return nil, fmt.Errorf("query %q: no result, warnings: %s", query, strings.Join(warnings, "; "))
	}
	return v, nil
}

// WaitForSeries polls /api/v1/series until selector matches at least n
// series, and returns them. It gives up when ctx is done or, if ctx has no
// deadline, after 30s; the error then names the last count seen.
func (s *Server) WaitForSeries(ctx context.Context, selector string, n int) ([]model.LabelSet, error) {
	ctx, cancel := boundedContext(ctx)
	defer cancel()
	var (
		last    []model.LabelSet
		lastErr error
	)
	for {
		series, _, err := s.api.Series(ctx, []string{selector}, time.Time{}, time.Time{})
		if err == nil && len(series) >= n {
			return series, nil
		}
		if err == nil {
			last = series
		}
		lastErr = err
		if err := sleep(ctx); err != nil {
			return last, fmt.Errorf("wait for %d series %s: saw %d (last error: %v): %w",
				n, selector, len(last), lastErr, err)
		}
	}
}

// WaitForVector evaluates query as an instant query until it returns a vector
// for which cond returns true, and returns that vector. It gives up when ctx
// is done or, if ctx has no deadline, after 30s; the error then shows the last
// result.
func (s *Server) WaitForVector(ctx context.Context, query string, cond func(model.Vector) bool) (model.Vector, error) {
	ctx, cancel := boundedContext(ctx)
	defer cancel()
	var (
		last    model.Vector
		lastErr error
	)
	for {
		v, err := s.Query(ctx, query)
		if err == nil {
			vec, ok := v.(model.Vector)
			if !ok {
				return nil, fmt.Errorf("query %q: got %s, want a vector", query, v.Type())
			}
			if cond(vec) {
				return vec, nil
			}
			last = vec
		}
		lastErr = err
		if err := sleep(ctx); err != nil {
			return last, fmt.Errorf("wait for %q: last result %v (last error: %v): %w", query, last, lastErr, err)
		}
	}
}

// reload asks the running Prometheus to re-read its configuration.
func (s *Server) reload(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/-/reload", nil)
	if err != nil {
		return fmt.Errorf("reload prometheus: %w", err)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("reload prometheus: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("reload prometheus: status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// boundedContext applies defaultWaitTimeout if ctx has no deadline.
func boundedContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultWaitTimeout)
}

// sleep waits one poll interval or until ctx is done.
func sleep(ctx context.Context) error {
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
