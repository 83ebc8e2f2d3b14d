package prom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/prom/fake"
)

// TestGuardPerBackend: a backend whose concurrency slots are all taken by hung
// requests does not hold up another backend's requests, and each backend's
// requests are counted under its own backend label.
func TestGuardPerBackend(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := prom.NewGuardMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	hung := &fake.Client{Gate: make(chan struct{}), QueryFunc: func(string) (model.Vector, error) { return nil, nil }}
	ok := &fake.Client{QueryFunc: func(string) (model.Vector, error) { return model.Vector{{Value: 1}}, nil }}
	b := prom.WithDefault(m.Guard(ok, prom.GuardOptions{MaxConcurrent: 1}, "default"),
		prom.Backends{"slow": m.Guard(hung, prom.GuardOptions{MaxConcurrent: 1}, "slow")})
	slow, err := b.For("slow")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = slow.Query(ctx, "hung") }() // takes slow's only slot
	for deadline := time.Now().Add(5 * time.Second); len(hung.Queries()) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow backend's query never started")
		}
	}
	def, err := b.For("")
	if err != nil {
		t.Fatal(err)
	}
	qctx, qcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer qcancel()
	if v, err := def.Query(qctx, "up"); err != nil || len(v) != 1 {
		t.Fatalf("default backend blocked by the slow one: %v %v", v, err)
	}
	if n := testutil.CollectAndCount(reg, "ebbflow_adapter_prometheus_request_duration_seconds"); n != 1 {
		t.Errorf("%d request series, want 1 (default, success)", n)
	}
	if got := inflight(t, reg, "slow"); got != 1 {
		t.Errorf("inflight{backend=slow} = %v, want 1", got)
	}
	if _, err := b.For("nope"); !errors.Is(err, prom.ErrUnknownBackend) {
		t.Errorf("unknown backend: %v", err)
	}
}

func inflight(t *testing.T, reg *prometheus.Registry, backend string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ebbflow_adapter_prometheus_inflight_requests" {
			continue
		}
		for _, mm := range mf.GetMetric() {
			if mm.GetLabel()[0].GetValue() == backend {
				return mm.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no inflight series for backend %q", backend)
	return 0
}
