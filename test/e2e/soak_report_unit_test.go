package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestSoakHeapCheck: the soak's heap check passes a heap that spikes with
// the responses in flight and comes back down, and fails one whose floor
// rises (a leak), though both reach the same maximum.
func TestSoakHeapCheck(t *testing.T) {
	const mb = 1 << 20
	start := time.Unix(1_000_000, 0)
	d := 100 * time.Second
	run := func(heapAt func(sec int) float64) []string {
		p := &adapterProbe{}
		for sec := 0; sec <= 100; sec++ {
			p.all = append(p.all, adapterSample{at: start.Add(time.Duration(sec) * time.Second), heap: heapAt(sec), rss: 100 * mb})
		}
		r := soakReport{d: d, start: start, end: start.Add(d), probe: p, load: &soakLoad{},
			after: adapterSample{heap: 30 * mb, rss: 100 * mb}}
		return r.problems()
	}
	grew := func(problems []string) bool {
		for _, p := range problems {
			if strings.HasPrefix(p, "heap grew") {
				return true
			}
		}
		return false
	}
	// Warm-up (the first 20 s) peaks at 30 MiB: the bound is 61 MiB, which
	// the spikes exceed (the old check, on the maximum, failed them).
	spiky := func(sec int) float64 {
		if sec <= 20 {
			return 30 * mb
		}
		if sec%2 == 0 {
			return 90 * mb // responses in flight
		}
		return 25 * mb
	}
	if p := run(spiky); grew(p) {
		t.Errorf("a heap that spikes to 90 MiB and falls back to 25 MiB failed the check: %v", p)
	}
	leaking := func(sec int) float64 {
		if sec <= 20 {
			return 30 * mb
		}
		floor := 30*mb + float64(sec-20)*mb // +1 MiB a second
		if sec%2 == 0 {
			return max(floor, 90*mb)
		}
		return floor
	}
	if p := run(leaking); !grew(p) {
		t.Errorf("a heap whose floor rises 1 MiB a second passed the check: %v", p)
	}
}
