package e2e

import (
	"testing"
)

// TestLeaderFailover: two ebbflow-autoscaler replicas under leader election
// (Lease 4s, renew deadline 3s, sync period 2s) scale a Deployment on a
// ramping External metric. The leader is killed (SIGKILL) mid-ramp; then,
// with the replaced pair, the new leader is frozen (SIGSTOP) for longer than
// the Lease and resumed. Each time the other replica must take over within
// the lease duration + one sync period, every /scale write must come from the
// replica that held the Lease (by the events' reportingInstance), never two
// replicas' writes within one sync period, the count only grows during the
// ramp and ends where one controller would put it, and the resumed old leader
// must write nothing and stop by itself. `make bench-failover` repeats the
// kill many times and records p50/max.
func TestLeaderFailover(t *testing.T) {
	pair := startPair(t)
	for _, mode := range []faultMode{faultKill, faultFreeze} {
		t.Run(string(mode), func(t *testing.T) {
			fo := runFailover(t, pair, mode, 0)
			t.Log(fo)
			for _, p := range fo.problems() {
				t.Error(p)
			}
		})
	}
}
