package prom

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/prometheus/common/model"
)

// MatrixQuerier evaluates instant queries whose result is a range vector (a
// subquery, for a metric's history). The HTTP client and Guard implement
// it; the response body is capped as every other response.
type MatrixQuerier interface {
	QueryMatrix(ctx context.Context, query string) (model.Matrix, error)
}

var (
	_ MatrixQuerier = (*HTTPClient)(nil)
	_ MatrixQuerier = (*Guard)(nil)
)

// QueryMatrix implements MatrixQuerier over /api/v1/query.
func (c *HTTPClient) QueryMatrix(ctx context.Context, query string) (model.Matrix, error) {
	data, err := c.query(ctx, "/api/v1/query", url.Values{"query": {query}})
	if err != nil {
		return nil, err
	}
	if data.Type != model.ValMatrix {
		return nil, fmt.Errorf("query returned a %s, want a matrix", data.Type)
	}
	var m model.Matrix
	if err := json.Unmarshal(data.Result, &m); err != nil {
		return nil, fmt.Errorf("decode matrix: %w", err)
	}
	return m, nil
}

// QueryMatrix implements MatrixQuerier: bounded and counted as Query, not
// shared between callers (a history is read rarely); a wrapped client that
// cannot answer one is an error.
func (g *Guard) QueryMatrix(ctx context.Context, query string) (model.Matrix, error) {
	mq, ok := g.next.(MatrixQuerier)
	if !ok {
		return nil, fmt.Errorf("the backend's client %T cannot evaluate a range-vector query", g.next)
	}
	ctx, cancel := g.bounded(ctx)
	defer cancel()
	var m model.Matrix
	err := g.run(ctx, "query", func(ctx context.Context) error {
		var err error
		m, err = mq.QueryMatrix(ctx, query)
		return err
	})
	return m, err
}
