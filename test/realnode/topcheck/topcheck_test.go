package topcheck

import (
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

// kubelet builds two reads 30 s apart: each pod's CPU in millicores and
// working set in MiB.
func kubelet(cpuMilli, memMiB map[string]float64) (Kubelet, Kubelet) {
	t0 := time.Unix(1700000000, 0)
	before, after := Kubelet{}, Kubelet{}
	for pod, m := range cpuMilli {
		before[pod] = map[string]Container{"web": {CPUSeconds: 100, CPUAt: t0}}
		after[pod] = map[string]Container{"web": {CPUSeconds: 100 + m*30/1000, CPUAt: t0.Add(30 * time.Second), MemBytes: memMiB[pod] * (1 << 20)}}
	}
	return before, after
}

func TestCompare(t *testing.T) {
	before, after := kubelet(map[string]float64{"a": 200, "b": 50, "c": 2}, map[string]float64{"a": 14, "b": 12, "c": 9})
	for _, tc := range []struct {
		name    string
		top     map[string]Top
		before  Kubelet
		wantErr string
	}{
		{"agree", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, before, ""},
		{"cpu apart", map[string]Top{"a": {100, 14}, "b": {52, 12}, "c": {3, 9}}, before, "pod a: cpu 100m"},
		{"memory apart", map[string]Top{"a": {190, 20}, "b": {52, 12}, "c": {3, 9}}, before, "pod a: memory 20Mi"},
		{"fewer than three", map[string]Top{"a": {190, 14}, "b": {52, 12}}, before, "only 2 pods compared"},
		{"none compared", map[string]Top{}, before, "only 0 pods compared"},
		{"missing from the kubelet", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}, "d": {1, 1}}, before, "pod d: in kubectl top, not in the kubelet's answer"},
		{"started within the window", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, Kubelet{"a": before["a"], "b": before["b"]}, "only 2 pods compared"},
		{"started just before the window", map[string]Top{"a": {190, 14}, "b": {52, 12}, "c": {3, 9}}, before, "only 2 pods compared"},
		{"idle", map[string]Top{"c": {3, 9}, "c2": {3, 9}, "c3": {3, 9}}, nil, "idle pods prove nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, a := tc.before, after
			if tc.name == "idle" {
				b, a = kubelet(map[string]float64{"c": 2, "c2": 2, "c3": 2}, map[string]float64{"c": 9, "c2": 9, "c3": 9})
			}
			settled := b
			if tc.name == "started just before the window" {
				settled = Kubelet{"a": b["a"], "b": b["b"]}
			}
			err := Compare(tc.top, settled, b, a).Err()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}
