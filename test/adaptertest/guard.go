package adaptertest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebbflow/ebbflow/adapter/prom"
	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// Guard wraps next, the default backend's client, in a Guard as the adapter's
// Complete does; its self-metrics are registered with reg.
func Guard(t testing.TB, next prom.Client, opts prom.GuardOptions, reg prometheus.Registerer) *prom.Guard {
	t.Helper()
	guards, err := prom.NewGuardMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return guards.Guard(next, opts, rulefile.DefaultBackend)
}
