package benchcluster

import (
	"math"
	"strings"
	"testing"
	"time"
)

const page = `# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="horizontalpodautoscaler",le="0.01"} 10
workqueue_queue_duration_seconds_bucket{name="horizontalpodautoscaler",le="0.1"} 90
workqueue_queue_duration_seconds_bucket{name="horizontalpodautoscaler",le="1"} 100
workqueue_queue_duration_seconds_bucket{name="horizontalpodautoscaler",le="+Inf"} 100
workqueue_queue_duration_seconds_sum{name="horizontalpodautoscaler"} 3
workqueue_queue_duration_seconds_count{name="horizontalpodautoscaler"} 100
workqueue_queue_duration_seconds_bucket{name="other",le="0.01"} 1000
workqueue_queue_duration_seconds_bucket{name="other",le="0.1"} 1000
workqueue_queue_duration_seconds_bucket{name="other",le="1"} 1000
workqueue_queue_duration_seconds_bucket{name="other",le="+Inf"} 1000
workqueue_queue_duration_seconds_sum{name="other"} 1
workqueue_queue_duration_seconds_count{name="other"} 1000
# TYPE horizontal_pod_autoscaler_controller_reconciliations_total counter
horizontal_pod_autoscaler_controller_reconciliations_total{action="none",error="none"} 40
horizontal_pod_autoscaler_controller_reconciliations_total{action="scale_up",error="none"} 2
`

func TestScrapeSumAndHistogram(t *testing.T) {
	s, err := ParseScrape(page)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sum("horizontal_pod_autoscaler_controller_reconciliations_total", nil); got != 42 {
		t.Errorf("Sum = %v, want 42", got)
	}
	if got := s.Sum("workqueue_queue_duration_seconds", map[string]string{"name": "horizontalpodautoscaler"}); got != 100 {
		t.Errorf("Sum of a histogram = %v, want its count 100", got)
	}
	h := s.Histogram("workqueue_queue_duration_seconds", map[string]string{"name": "horizontalpodautoscaler"})
	if h.Total != 100 || len(h.Bounds) != 3 {
		t.Fatalf("histogram = %+v", h)
	}
	// p50: rank 50 lies in (0.01, 0.1], 40 of its 80 observations in.
	if got, want := h.Quantile(0.5), 0.01+0.09*40/80; math.Abs(got-want) > 1e-12 {
		t.Errorf("p50 = %v, want %v", got, want)
	}
	if got := h.Quantile(0.05); math.Abs(got-0.005) > 1e-12 {
		t.Errorf("p5 = %v, want 0.005 (first bucket from 0)", got)
	}
	before := Histogram{Bounds: []float64{0.01, 0.1, 1}, Counts: []float64{10, 10, 10}, Total: 10}
	d := h.Sub(before)
	if d.Total != 90 || d.Counts[0] != 0 || d.Counts[1] != 80 || d.Counts[2] != 90 {
		t.Errorf("Sub = %+v", d)
	}
	if !math.IsNaN((Histogram{}).Quantile(0.5)) {
		t.Error("empty histogram: want NaN")
	}
	if _, err := ParseScrape("not { a metric"); err == nil {
		t.Error("garbage parsed")
	}
}

func TestParseProc(t *testing.T) {
	stat := "4242 (kube controller) S 1 4242 4242 0 -1 4194560 9 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	status := "Name:\tkube\nVmRSS:\t  123456 kB\nThreads:\t12\n"
	p, err := ParseProc(stat, status)
	if err != nil {
		t.Fatal(err)
	}
	if p.CPU != 3*time.Second || p.RSS != 123456*1024 {
		t.Errorf("ParseProc = %+v, want 3s and 123456 KiB", p)
	}
	if _, err := ParseProc("4242 kube S 1", status); err == nil {
		t.Error("stat without a command: no error")
	}
	if _, err := ParseProc("1 (x) S 1 2", status); err == nil {
		t.Error("short stat: no error")
	}
}

func TestOverrunsAndPercentile(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	reads := map[string][]time.Time{
		"a": {at(0), at(15.1), at(30.5)},
		"b": {at(1), at(17)},
	}
	got := Overruns(reads, 15*time.Second, at(10), at(31))
	if len(got) != 3 || Percentile(got, 1) != time.Second || Percentile(got, 0) != 100*time.Millisecond {
		t.Errorf("Overruns = %v", got)
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("empty percentile")
	}
}

func TestTable(t *testing.T) {
	rs := []Result{
		{Name: "kcm", N: 200, SyncPeriod: 15 * time.Second, Window: 10 * time.Second, Evals: 50, LagP50: 1, LagP99: math.NaN(), CPU: time.Second, StubRequests: 150},
		{Name: "ebbflow", N: 200, SyncPeriod: 15 * time.Second, Window: 10 * time.Second, Evals: 130, CPU: time.Second, StubRequests: 390, Reactions: []time.Duration{time.Second},
			APIRequests: map[string]int{CatScaleGet: 130, CatMetrics: 390, CatEvents: 13}, APIServerCPU: 5 * time.Second},
	}
	out := Table(rs, "kcm")
	for _, want := range []string{"| kcm | 200 | 5.0 (13.3) | 1s / – |", "| 2.6× |", "| 3.00 |", "1s / 1s (1)", "– (no object read twice", "| 3.00 | – | – |", "| 4.10 | 1s / 1s (1) |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestAPITable(t *testing.T) {
	rs := []Result{
		{Name: "kcm", N: 200, Window: 10 * time.Second, Evals: 50},
		{Name: "ebbflow", N: 200, Window: 10 * time.Second, Evals: 130, APIServerCPU: 5 * time.Second, EtcdCPU: time.Second,
			APIRequests: map[string]int{CatScaleGet: 130, CatMetrics: 390, CatEvents: 13}},
	}
	out := APITable(rs)
	for _, want := range []string{
		"| controller | N | evals | requests/eval | scale get | scale update | HPA status write |",
		"| kcm | 200 | 50 | – | – | – |",
		"| ebbflow | 200 | 130 | 4.10 | 1.00 | 0.00 | 0.00 | 0.00 | 0.10 | 3.00 | 0.00 | 0.00 | 0.50 | 0.10 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
