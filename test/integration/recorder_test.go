package integration

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/prom"
)

// recorder passes calls through to a real client and remembers every query and the
// answer Prometheus gave, so tests can re-evaluate the same query at the same time.
type recorder struct {
	prom.Client
	mu      sync.Mutex
	queries []recorded
}

type recorded struct {
	query  string
	answer model.Vector
}

func (r *recorder) Query(ctx context.Context, q string) (model.Vector, error) {
	v, err := r.Client.Query(ctx, q)
	if err == nil {
		r.mu.Lock()
		r.queries = append(r.queries, recorded{q, v})
		r.mu.Unlock()
	}
	return v, err
}

func (r *recorder) Series(ctx context.Context, m []string, start time.Time, fn func(string, []string) error) error {
	return r.Client.Series(ctx, m, start, fn)
}

func (r *recorder) last() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queries) == 0 {
		return recorded{}
	}
	return r.queries[len(r.queries)-1]
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}
