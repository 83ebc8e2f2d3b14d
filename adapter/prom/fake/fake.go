// Package fake provides an in-memory prom.Client for unit tests.
package fake

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/prom"
)

// Series is one stored series: its name and labels.
type Series struct {
	Name   string
	Labels map[string]string
}

// Client answers from fixed data. Set the fields before use; it is safe for
// concurrent use afterwards.
type Client struct {
	mu sync.Mutex
	// Answers maps a PromQL query to its result.
	Answers map[string]model.Vector
	// QueryFunc, when set, answers queries not in Answers.
	QueryFunc func(query string) (model.Vector, error)
	// SeriesByMatch maps a match[] selector to the series it selects.
	SeriesByMatch map[string][]Series
	// Err, when set, fails every call.
	Err error
	// Gate, when set, blocks every call until it is closed or ctx is done.
	Gate chan struct{}

	queries []string
	matches [][]string
}

var _ prom.Client = (*Client)(nil)

// Queries returns the queries received so far, in order.
func (c *Client) Queries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.queries)
}

// SeriesCalls returns the match[] lists of Series and LabelValues calls so far.
func (c *Client) SeriesCalls() [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.matches)
}

// SetErr sets Err while the client is in use: a backend going down (err) or
// coming back (nil).
func (c *Client) SetErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Err = err
}

func (c *Client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Err
}

func (c *Client) wait(ctx context.Context) error {
	if c.Gate == nil {
		return c.err()
	}
	select {
	case <-c.Gate:
		return c.err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Query implements prom.Client.
func (c *Client) Query(ctx context.Context, query string) (model.Vector, error) {
	c.mu.Lock()
	c.queries = append(c.queries, query)
	c.mu.Unlock()
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	if v, ok := c.Answers[query]; ok {
		return v, nil
	}
	if c.QueryFunc != nil {
		return c.QueryFunc(query)
	}
	return nil, fmt.Errorf("fake: no answer for %q", query)
}

func (c *Client) selected(matches []string) []Series {
	c.mu.Lock()
	c.matches = append(c.matches, slices.Clone(matches))
	c.mu.Unlock()
	var out []Series
	for _, m := range matches {
		out = append(out, c.SeriesByMatch[m]...)
	}
	return out
}

// LabelValues implements prom.Client.
func (c *Client) LabelValues(ctx context.Context, label string, matches []string, _ time.Time) ([]string, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range c.selected(matches) {
		v := s.Labels[label]
		if label == model.MetricNameLabel {
			v = s.Name
		}
		if v != "" {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// Series implements prom.Client.
func (c *Client) Series(ctx context.Context, matches []string, _ time.Time, fn func(string, []string) error) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	for _, s := range c.selected(matches) {
		names := make([]string, 0, len(s.Labels))
		for k := range s.Labels {
			names = append(names, k)
		}
		slices.Sort(names)
		if err := fn(s.Name, names); err != nil {
			return err
		}
	}
	return nil
}
