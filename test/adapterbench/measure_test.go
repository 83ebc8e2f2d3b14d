package adapterbench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/benchcluster"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want Latency
	}{
		{"empty", nil, Latency{}},
		{"one", []time.Duration{3 * ms}, Latency{N: 1, P50: 3 * ms, P99: 3 * ms, Avg: 3 * ms}},
		{"unsorted", []time.Duration{4 * ms, 1 * ms, 10 * ms, 1 * ms}, Latency{N: 4, P50: 1 * ms, P99: 10 * ms, Avg: 4 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(tt.in); got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// scrapeText is a /metrics page: a histogram of custom.metrics.k8s.io
// requests and of other ones (count, sum), and an unchanging summary.
func scrapeText(custom, customSum, other, otherSum float64) string {
	return fmt.Sprintf(`# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{group="custom.metrics.k8s.io",verb="LIST",le="+Inf"} %[1]g
apiserver_request_duration_seconds_sum{group="custom.metrics.k8s.io",verb="LIST"} %[2]g
apiserver_request_duration_seconds_count{group="custom.metrics.k8s.io",verb="LIST"} %[1]g
apiserver_request_duration_seconds_bucket{group="",verb="GET",le="+Inf"} %[3]g
apiserver_request_duration_seconds_sum{group="",verb="GET"} %[4]g
apiserver_request_duration_seconds_count{group="",verb="GET"} %[3]g
# TYPE prometheus_engine_query_duration_seconds summary
prometheus_engine_query_duration_seconds_sum{slice="inner_eval"} 1
prometheus_engine_query_duration_seconds_count{slice="inner_eval"} 4
`, custom, customSum, other, otherSum)
}

func TestMeanBetween(t *testing.T) {
	before, err := benchcluster.ParseScrape(scrapeText(10, 0.5, 3, 9))
	if err != nil {
		t.Fatal(err)
	}
	after, err := benchcluster.ParseScrape(scrapeText(30, 0.9, 4, 19))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		metric string
		want   map[string]string
		out    Mean
	}{
		{"histogram of one group", "apiserver_request_duration_seconds", map[string]string{"group": "custom.metrics.k8s.io"}, Mean{Count: 20, Avg: 20 * time.Millisecond}},
		{"every series", "apiserver_request_duration_seconds", nil, Mean{Count: 21, Avg: 10400 * time.Millisecond / 21}},
		{"summary unchanged", "prometheus_engine_query_duration_seconds", nil, Mean{}},
		{"absent", "ebbflow_adapter_prometheus_request_duration_seconds", nil, Mean{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MeanBetween(before, after, tt.metric, tt.want)
			if got.Count != tt.out.Count || (got.Avg-tt.out.Avg).Abs() > time.Microsecond {
				t.Errorf("MeanBetween = %+v, want %+v", got, tt.out)
			}
		})
	}
}

func TestParsePeakRSS(t *testing.T) {
	got, err := ParsePeakRSS("Name:\tx\nVmPeak:\t 9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1024 kB\n")
	if err != nil || got != 2048*1024 {
		t.Errorf("ParsePeakRSS = %d, %v; want %d", got, err, 2048*1024)
	}
	if _, err := ParsePeakRSS("VmRSS:\t 1024 kB\n"); err == nil {
		t.Error("ParsePeakRSS without VmHWM: no error")
	}
}

func TestReportWrite(t *testing.T) {
	path := func(name string, p50 time.Duration) Path {
		return Path{Name: name, Latency: Latency{N: 10, P50: p50, P99: 2 * p50, Avg: p50},
			Query: Mean{Count: 10, Avg: p50 / 2}}
	}
	r := Report{Date: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC), Pods: 1000, Uptime: "load average: 1.00",
		Results: []Result{
			{Adapter: "ebbflow-adapter", Paths: []Path{path("* via kube-apiserver", 10*time.Millisecond)}, Throughput: 100, Clients: 8, PeakRSS: 100 << 20},
			{Adapter: "prometheus-adapter", Paths: []Path{path("* via kube-apiserver", 40*time.Millisecond)}, Throughput: 5, Clients: 8, PeakRSS: 150 << 20},
		}}
	var b strings.Builder
	r.Write(&b)
	for _, want := range []string{
		"| * via kube-apiserver p50 ms | 10.0 | 40.0 | 4.0× |",
		"| * via kube-apiserver, 8 clients, requests/s | 100.0 | 5.0 | 20.0× |",
		"| peak RSS MiB | 100 | 150 | 1.5× |",
		"| * via kube-apiserver | 10 | 10.0 | 10.0 | 0.0 | n/a | 5.0 | 1.00 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
