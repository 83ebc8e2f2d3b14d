package topcheck

import (
	"math"
	"strings"
	"testing"
	"time"
)

const resource = `# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="web",namespace="shop",pod="a"} %A 1700000000000
container_cpu_usage_seconds_total{container="web",namespace="shop",pod="b"} %B 1700000000000
container_cpu_usage_seconds_total{container="c",namespace="other",pod="x"} 5 1700000000000
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="web",namespace="shop",pod="a"} 10485760 1700000000000
container_memory_working_set_bytes{container="web",namespace="shop",pod="b"} 20971520 1700000000000
`

func TestParseKubelet(t *testing.T) {
	k, err := ParseKubelet(strings.NewReplacer("%A", "1.5", "%B", "2").Replace(resource), "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(k) != 2 || k["a"]["web"].CPUSeconds != 1.5 || k["b"]["web"].MemBytes != 20971520 || k["a"]["web"].CPUAt.UnixMilli() != 1700000000000 {
		t.Errorf("parsed %+v", k)
	}
}

func TestParseTop(t *testing.T) {
	top, err := ParseTop("a   120m   14Mi\nb   3m   20Mi\n")
	if err != nil || len(top) != 2 || top["a"] != (Top{120, 14}) {
		t.Errorf("ParseTop: %v %v", top, err)
	}
	if _, err := ParseTop("a 1 2\n"); err == nil {
		t.Error("ParseTop accepted a line without units")
	}
}

var t0 = time.Unix(1700000000, 0)

// reads builds kubelet reads every 5 s from t0 to t0+40 s: each pod's CPU in
// millicores (steady) and working set in MiB; a pod in start is first
// counted that many seconds after t0.
func reads(cpuMilli, memMiB map[string]float64, start map[string]int) Reads {
	var r Reads
	for s := 0; s <= 40; s += 5 {
		k := Kubelet{}
		at := t0.Add(time.Duration(s) * time.Second)
		for pod, m := range cpuMilli {
			if s < start[pod] {
				continue
			}
			k[pod] = map[string]Container{"web": {CPUSeconds: 100 + m*float64(s)/1000, CPUAt: at, MemBytes: memMiB[pod] * (1 << 20)}}
		}
		r.Add(k)
	}
	return r
}

func TestCompare(t *testing.T) {
	cpu, mem := map[string]float64{"a": 200, "b": 50, "c": 2}, map[string]float64{"a": 14, "b": 12, "c": 9}
	at, window := t0.Add(40*time.Second), 30*time.Second
	for _, tc := range []struct {
		name    string
		top     map[string]Top
		reads   Reads
		wantErr string
	}{
		{"agree", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, nil), ""},
		{"cpu apart", map[string]Top{"a": {100, 14}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, nil), "pod a: cpu 100m"},
		{"memory apart", map[string]Top{"a": {190, 20}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, nil), "pod a: memory 20Mi"},
		{"fewer than three", map[string]Top{"a": {190, 14}, "b": {52, 12}}, reads(cpu, mem, nil), "only 2 pods compared"},
		{"none compared", map[string]Top{}, reads(cpu, mem, nil), "only 0 pods compared"},
		{"missing from the kubelet", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}, "d": {1, 1}}, reads(cpu, mem, nil), "pod d: in kubectl top, not in the kubelet's answer"},
		{"started within the window", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, map[string]int{"c": 20}), "only 2 pods compared"},
		{"started just before the window", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, map[string]int{"c": 5}), "only 2 pods compared"},
		{"settled before the window", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, reads(cpu, mem, map[string]int{"c": 0}), ""},
		{"idle", map[string]Top{"c": {3, 9}, "c2": {3, 9}, "c3": {3, 9}}, reads(map[string]float64{"c": 2, "c2": 2, "c3": 2}, map[string]float64{"c": 9, "c2": 9, "c3": 9}, nil), "idle pods prove nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Compare(tc.top, Query{Start: at, End: at, Window: window}, tc.reads).Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

// TestCompareReadsTheSameWindow: a pod idle for 30 s, then at 200m, is
// compared over the window top covers (200m), not over all the reads (100m).
func TestCompareReadsTheSameWindow(t *testing.T) {
	var r Reads
	for s := 0; s <= 60; s += 5 {
		cpu := 100 + 0.2*float64(max(s-30, 0))
		r.Add(Kubelet{"a": {"web": {CPUSeconds: cpu, CPUAt: t0.Add(time.Duration(s) * time.Second), MemBytes: 1 << 20}}})
	}
	q := Query{Start: t0.Add(60 * time.Second), End: t0.Add(60 * time.Second), Window: 30 * time.Second}
	if res := Compare(map[string]Top{"a": {200, 1}}, q, r); len(res.Problems) != 0 || len(res.Compared) != 1 {
		t.Errorf("over the last 30 s the pod used 200m: %+v", res)
	}
	if res := Compare(map[string]Top{"a": {100, 1}}, q, r); len(res.Problems) == 0 {
		t.Errorf("100m passed against 200m over the window: %+v", res)
	}
}

// TestCompareUnscrapedSample: a pod at 100m, then 400m from 10 s before
// the query; samples every 10 s. Prometheus had not yet scraped the sample
// stamped 1 s before the query, so top read the window without it: that
// passes with Lag covering it and fails without; a value no view gives
// fails either way.
func TestCompareUnscrapedSample(t *testing.T) {
	var r Reads
	cpu := func(s float64) float64 { return 100 + 0.1*s + 0.3*max(s-50, 0) } // 100m, 400m from 50 s
	for _, s := range []float64{0, 10, 20, 30, 40, 50, 59} {
		r.Add(Kubelet{"a": {"web": {CPUSeconds: cpu(s), CPUAt: t0.Add(time.Duration(s * float64(time.Second))), MemBytes: 1 << 20}}})
	}
	at := t0.Add(60 * time.Second)
	without := Query{Start: at, End: at, Window: 30 * time.Second, Lag: 2 * time.Second}.cpuViews()[1]
	seen, _, ok := cpuRate(r.cpu["a"], without)
	if !ok || math.Abs(seen-100) > 1 {
		t.Fatalf("the window without the last sample reads %.1fm, want 100m", seen)
	}
	withLag := Query{Start: at, End: at, Window: 30 * time.Second, Lag: 4 * time.Second}
	if res := Compare(map[string]Top{"a": {seen, 1}}, withLag, r); len(res.Problems) != 0 {
		t.Errorf("top as Prometheus saw it (%.1fm), last sample unscraped: %v", seen, res.Problems)
	}
	if res := Compare(map[string]Top{"a": {seen, 1}}, Query{Start: at, End: at, Window: 30 * time.Second}, r); len(res.Problems) == 0 {
		t.Errorf("without Lag, %.1fm passed against the full window: %v", seen, res.Lines)
	}
	if res := Compare(map[string]Top{"a": {400, 1}}, withLag, r); len(res.Problems) == 0 || !strings.Contains(res.Problems[0], "kubelet samples [web:") {
		t.Errorf("400m, which no view gives, passed or its problem lacks the samples: %v", res.Problems)
	}
}

// TestPromRate: rate()'s extrapolation on few samples, as Prometheus
// computes it: three samples 10 s apart inside a 30 s window extrapolate
// to the true rate; two samples 10 s apart, 12 s after the window's start,
// extrapolate by only half an interval there and read low.
func TestPromRate(t *testing.T) {
	at := func(s, v float64) Container {
		return Container{CPUSeconds: v, CPUAt: t0.Add(time.Duration(s * float64(time.Second)))}
	}
	from, to := t0, t0.Add(30*time.Second)
	for _, tc := range []struct {
		name string
		in   []Container
		want float64
	}{
		{"three inside", []Container{at(5, 100.5), at(15, 101.5), at(25, 102.5)}, 0.1},
		{"two late", []Container{at(12, 101.2), at(22, 102.2)}, 2.3 / 30},
		{"a reset", []Container{at(5, 100.5), at(15, 0.5), at(25, 1.5)}, 1.5 * 1.5 / 30},
	} {
		got, ok := promRate(tc.in, from, to)
		if !ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: promRate = %v, %v; want %v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := promRate([]Container{at(5, 1)}, from, to); ok {
		t.Error("promRate of one sample")
	}
}

// TestCPUViewsDistinct: a view is listed once: no lag view without a Lag,
// one end when kubectl's start and return are the same instant.
func TestCPUViewsDistinct(t *testing.T) {
	at := t0.Add(time.Minute)
	for _, c := range []struct {
		q    Query
		want int
	}{
		{Query{Start: at, End: at, Window: 30 * time.Second}, 1},
		{Query{Start: at, End: at, Window: 30 * time.Second, Lag: 4 * time.Second}, 2},
		{Query{Start: at, End: at.Add(time.Second), Window: 30 * time.Second}, 2},
		{Query{Start: at, End: at.Add(time.Second), Window: 30 * time.Second, Lag: 4 * time.Second}, 4},
	} {
		vs := c.q.cpuViews()
		if len(vs) != c.want {
			t.Errorf("%+v: %d views, want %d: %v", c.q, len(vs), c.want, vs)
		}
		for i := range vs {
			for j := i + 1; j < len(vs); j++ {
				if vs[i] == vs[j] {
					t.Errorf("%+v: view %d repeats view %d", c.q, j, i)
				}
			}
		}
	}
}
