package storetest

import (
	"strings"
	"testing"
	"time"
)

func TestHoleKill(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)
	kills := []time.Time{t0.Add(time.Minute), t0.Add(3 * time.Minute)}
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		want     int
	}{
		{"before any kill", 10 * time.Second, 20 * time.Second, -1},
		{"lost before the first kill (unflushed on SIGKILL)", 50 * time.Second, 62 * time.Second, 0},
		{"after the first kill's restart", 90 * time.Second, 95 * time.Second, 0},
		{"spanning the second kill", 170 * time.Second, 185 * time.Second, 1},
		{"ending just before the second kill (its last sample resent)", 168 * time.Second, 179 * time.Second, 1},
		{"after the second kill", 200 * time.Second, 210 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hole{from: t0.Add(tc.from), to: t0.Add(tc.to)}
			if got := h.kill(kills); got != tc.want {
				t.Errorf("kill = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseExposition(t *testing.T) {
	m, err := parseExposition(strings.NewReader(`# HELP x y
# TYPE cortex_discarded_samples_total counter
cortex_discarded_samples_total{group="",reason="sample-out-of-order",user="ebbflow"} 12
cortex_discarded_samples_total{group="",reason="sample-too-old",user="ebbflow"} 3
prometheus_remote_storage_samples_failed_total{remote_name="a",url="http://x"} 7
prometheus_remote_storage_samples_failed_total_other 100
prometheus_remote_storage_shards{remote_name="a",url="http://x"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sumOf(m, "prometheus_remote_storage_samples_failed_total"); got != 7 {
		t.Errorf("failed = %v, want 7 (not another metric sharing the prefix)", got)
	}
	if got := sumOf(m, "cortex_discarded_samples_total"); got != 15 {
		t.Errorf("discarded = %v, want 15", got)
	}
	byReason := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "cortex_discarded_samples_total") {
			byReason[reasonOf(k)] += v
		}
	}
	if byReason["sample-out-of-order"] != 12 || byReason["sample-too-old"] != 3 {
		t.Errorf("by reason = %v", byReason)
	}
}

func TestWriteWatchBetween(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC)
	w := &writeWatch{samples: []writeSample{
		{at: t0, values: map[string]float64{"failed": 5, "store sample-too-old": 2}, lag: 1, shards: 1},
		{at: t0.Add(time.Second), values: map[string]float64{"failed": 9}, lag: 30, shards: 1}, // store down
		{at: t0.Add(2 * time.Second), values: map[string]float64{"failed": 9, "store sample-too-old": 1, "store sample-out-of-order": 4}, lag: 2, shards: 3},
		{at: t0.Add(3 * time.Second), values: map[string]float64{"failed": 100}},
	}}
	inc, lag, shards := w.between(t0, t0.Add(3*time.Second))
	if inc["failed"] != 4 || inc["store sample-too-old"] != 1 || inc["store sample-out-of-order"] != 4 || lag != 30 || shards != 3 {
		t.Errorf("between = %v, lag %v, shards %v; want failed 4, too-old 1 (restarted), out-of-order 4 (first counted), lag 30, shards 3", inc, lag, shards)
	}
}
