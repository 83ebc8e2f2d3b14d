package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// MaxRangePoints is the most points Prometheus returns per series for one
// range query (its own limit is 11,000); QueryRange callers chunk longer
// ranges.
const MaxRangePoints = 10_000

// RangeQuerier evaluates range queries.
type RangeQuerier interface {
	// QueryRange evaluates query at start, start+step, … up to end and
	// returns one series per label set. At most MaxRangePoints steps may be
	// asked at once.
	QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error)
}

var _ RangeQuerier = (*HTTPClient)(nil)

// QueryRange implements RangeQuerier over /api/v1/query_range (POST when the
// query is too long for a URL, like Query). The response body is capped as
// every other response.
func (c *HTTPClient) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if step <= 0 {
		return nil, errors.New("range query step must be positive")
	}
	if end.Before(start) {
		return nil, errors.New("range query end is before its start")
	}
	if n := end.Sub(start)/step + 1; n > MaxRangePoints {
		return nil, fmt.Errorf("range query of %d steps exceeds %d", n, MaxRangePoints)
	}
	form := url.Values{
		"query": {query},
		"start": {formatTime(start)},
		"end":   {formatTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}
	data, err := c.query(ctx, "/api/v1/query_range", form)
	if err != nil {
		return nil, err
	}
	if data.Type != model.ValMatrix {
		return nil, fmt.Errorf("range query returned a %s, want a matrix", data.Type)
	}
	var m model.Matrix
	if err := json.Unmarshal(data.Result, &m); err != nil {
		return nil, fmt.Errorf("decode matrix: %w", err)
	}
	return m, nil
}
