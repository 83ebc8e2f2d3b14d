//go:build failover

package e2e

// The failover harness (build tag "failover", run by `make bench-failover`;
// not part of `make test`, whose TestLeaderFailover does one kill and one
// freeze): EBBFLOW_FAILOVERS rounds (default 10) of SIGKILL of the leader
// mid-ramp, each checked as in TestLeaderFailover, with the time from the
// kill to the new leader's Lease and to its first /scale write. See
// docs/benchmarks.md.

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestFailoverBench(t *testing.T) {
	n := 10
	if v := os.Getenv("EBBFLOW_FAILOVERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 200 {
			t.Fatalf("EBBFLOW_FAILOVERS=%q: want an integer in [1, 200]", v)
		}
	}
	pair := startPair(t)
	var acquired, written []time.Duration
	for i := range n {
		// The kill lands anywhere within a sync period of the leader's cycle.
		fo := runFailover(t, pair, faultKill, time.Duration(rand.Int64N(int64(foSyncPeriod))))
		t.Logf("round %d: %v", i+1, fo)
		for _, p := range fo.problems() {
			t.Errorf("round %d: %s", i+1, p)
		}
		acquired, written = append(acquired, fo.acquired), append(written, fo.firstWrite)
	}
	t.Logf("failovers: %d (lease %v, renew deadline %v, retry %v, sync period %v; bound %v)", n,
		foLeaseDuration, foRenewDeadline, foRetryPeriod, foSyncPeriod, foTakeoverBound)
	t.Logf("kill → Lease taken:         p50 %v max %v", quantile(acquired, 0.5).Round(time.Millisecond), quantile(acquired, 1).Round(time.Millisecond))
	t.Logf("kill → first /scale write:  p50 %v max %v", quantile(written, 0.5).Round(time.Millisecond), quantile(written, 1).Round(time.Millisecond))
}
