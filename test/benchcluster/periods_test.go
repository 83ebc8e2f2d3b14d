package benchcluster

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSplitPeriods(t *testing.T) {
	periods := []time.Duration{5 * time.Second, 15 * time.Second, time.Minute}
	g, err := SplitPeriods(301, periods)
	if err != nil {
		t.Fatal(err)
	}
	want := []PeriodGroup{{5 * time.Second, 101}, {15 * time.Second, 100}, {time.Minute, 100}}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("group %d = %+v, want %+v", i, g[i], want[i])
		}
	}
	// 101/5 + 100/15 + 100/60
	if got, want := DueRate(g), 20.2+100.0/15+100.0/60; math.Abs(got-want) > 1e-9 {
		t.Errorf("DueRate = %v, want %v", got, want)
	}
	if got, want := DueRateAfter(g, time.Second), 101.0/6+100.0/16+100.0/61; math.Abs(got-want) > 1e-9 {
		t.Errorf("DueRateAfter = %v, want %v", got, want)
	}
	if got := MaxPeriod(g); got != time.Minute {
		t.Errorf("MaxPeriod = %v", got)
	}
	if got := Mix(g); got != "101×5s + 100×15s + 100×1m0s" {
		t.Errorf("Mix = %q", got)
	}
	for _, bad := range []struct {
		n       int
		periods []time.Duration
		want    string
	}{
		{0, periods, "at least 1"},
		{3, nil, "no sync period"},
		{3, []time.Duration{1500 * time.Millisecond}, "whole seconds"},
		{3, []time.Duration{0}, "whole seconds"},
	} {
		if _, err := SplitPeriods(bad.n, bad.periods); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SplitPeriods(%d, %v) = %v, want an error with %q", bad.n, bad.periods, err, bad.want)
		}
	}
}

func TestParsePeriods(t *testing.T) {
	got, err := ParsePeriods("5s, 15s,1m")
	if err != nil || len(got) != 3 || got[0] != 5*time.Second || got[2] != time.Minute {
		t.Errorf("ParsePeriods = %v, %v", got, err)
	}
	if _, err := ParsePeriods("5s,x"); err == nil || !strings.Contains(err.Error(), `"5s,x"`) {
		t.Errorf("ParsePeriods(5s,x) = %v, want an error naming the value", err)
	}
}

func TestPeriodTable(t *testing.T) {
	r := PeriodResult{
		Groups: []PeriodGroup{{5 * time.Second, 10}, {10 * time.Second, 10}},
		Window: 10 * time.Second, Evals: 30, EvalTime: 250 * time.Millisecond, MetricReads: 30,
		APIRequests: map[string]int{CatMetrics: 30, CatScaleGet: 30, CatHPAStatus: 10},
		CPU:         300 * time.Millisecond, AdapterCPU: 100 * time.Millisecond, APIServerCPU: time.Second, RSS: 64 << 20,
	}
	row := strings.Split(strings.TrimSpace(PeriodTable([]PeriodResult{r})), "\n")[2]
	// due 10/5 + 10/10 = 3/s; 30 evaluations in 10 s = 3/s; 70 requests =
	// 7/s, 3 of them metrics, 3 /scale GETs, 1 other; 300 ms CPU = 30 ms/s,
	// 10,000 µs an evaluation; evaluated a period after the previous one
	// ended, 250 ms later: 10/5.25 + 10/10.25 = 2.88/s.
	want := "| 10×5s + 10×10s | 3.00 | 3.00 (2.88) | 250.0 | 3.00 | 7.00 | 3.00 | 3.00 | 1.00 | 30.0 (10000) | 10.0 | 100.0 | 64 |"
	if row != want {
		t.Errorf("row\n%s\nwant\n%s", row, want)
	}
}
