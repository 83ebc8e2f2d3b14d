package prom_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/prom/fake"
)

func TestGuardDeduplicatesConcurrentQueries(t *testing.T) {
	gate := make(chan struct{})
	f := &fake.Client{Gate: gate, Answers: map[string]model.Vector{"up": {{Value: 1}}}}
	reg := prometheus.NewRegistry()
	g, err := prom.NewGuard(f, prom.GuardOptions{MaxConcurrent: 4}, reg)
	if err != nil {
		t.Fatal(err)
	}
	const callers = 10
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := g.Query(context.Background(), "up")
			if err == nil && (len(v) != 1 || v[0].Value != 1) {
				err = errors.New("wrong answer")
			}
			errs <- err
		}()
	}
	// Wait until the one real call is in flight, then let all callers join it.
	deadline := time.Now().Add(5 * time.Second)
	for len(f.Queries()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // give the other callers time to join the flight
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.Queries()); n >= callers {
		t.Errorf("Prometheus received %d queries for %d identical concurrent callers", n, callers)
	}
	if got := counterValue(t, reg, "ebbflow_adapter_prometheus_deduplicated_queries_total"); got == 0 {
		t.Error("deduplicated counter not incremented")
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func TestGuardBoundsConcurrency(t *testing.T) {
	gate := make(chan struct{})
	f := &fake.Client{Gate: gate, QueryFunc: func(string) (model.Vector, error) { return model.Vector{}, nil }}
	g, err := prom.NewGuard(f, prom.GuardOptions{MaxConcurrent: 2}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = g.Query(context.Background(), string(rune('a'+i)))
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(f.Queries()); n != 2 {
		t.Errorf("%d queries in flight, want the bound 2", n)
	}
	close(gate)
	wg.Wait()
	if n := len(f.Queries()); n != 5 {
		t.Errorf("%d queries answered, want 5", n)
	}
}

func TestGuardCallerCancellation(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	f := &fake.Client{Gate: gate}
	g, err := prom.NewGuard(f, prom.GuardOptions{MaxConcurrent: 1, Timeout: time.Minute}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := g.Query(ctx, "up"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
}

func TestGuardPropagatesErrors(t *testing.T) {
	boom := errors.New("boom")
	f := &fake.Client{Err: boom}
	g, err := prom.NewGuard(f, prom.GuardOptions{MaxConcurrent: 1}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Query(context.Background(), "up"); !errors.Is(err, boom) {
		t.Errorf("query err = %v", err)
	}
	if err := g.Series(context.Background(), []string{"up"}, time.Time{}, func(string, []string) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("series err = %v", err)
	}
}
