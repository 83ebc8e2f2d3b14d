package fakeapp

import (
	"testing"
	"time"
)

func usageKey(metric, pod string) string {
	return key(metric, map[string]string{"namespace": "shop", "pod": pod, "container": "app"})
}

func TestStepPublishesUsage(t *testing.T) {
	sink := newFakeSink()
	sim, err := New(Config{Sink: sink, Services: []Service{{
		Namespace: "shop", Service: "web", Rate: Constant(40),
		Usage: &Usage{IdleCores: 0.01, CoresPerRequest: 0.005, MemoryBytes: 64 << 20},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	web := &fakePods{ready: []string{"web-a", "web-b"}, notReady: []string{"web-c"}}
	if err := sim.attach(func(string, string) (Pods, error) { return web, nil }); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	sim.begin(t0)
	sim.Step(t0.Add(2 * time.Second))
	// Ready pods serve 20 req/s each: 0.01 + 0.1 cores for 2s; web-c idles.
	for pod, want := range map[string]float64{"web-a": 0.22, "web-b": 0.22, "web-c": 0.02} {
		if v, ok := sink.get(usageKey(CPUUsageMetric, pod)); !ok || !near(v, want) {
			t.Errorf("%s cpu seconds = %v (%v), want %v", pod, v, ok, want)
		}
		if v, _ := sink.get(usageKey(MemoryUsageMetric, pod)); v != 64<<20 {
			t.Errorf("%s memory = %v", pod, v)
		}
	}
	// web-b goes away: its series go with it; web-a now serves all 40 req/s.
	web.ready = []string{"web-a"}
	sim.Step(t0.Add(3 * time.Second))
	if _, ok := sink.get(usageKey(CPUUsageMetric, "web-b")); ok {
		t.Error("series of a deleted pod kept")
	}
	if v, _ := sink.get(usageKey(CPUUsageMetric, "web-a")); !near(v, 0.22+0.21) {
		t.Errorf("web-a cpu seconds = %v, want 0.43", v)
	}
	sim.clear()
	if n := sink.len(); n != 0 {
		t.Errorf("%d series left after clear", n)
	}
}

func TestUsageRejectsNegative(t *testing.T) {
	_, err := New(Config{Sink: newFakeSink(), Services: []Service{{Namespace: "a", Service: "s", Rate: Constant(1), Usage: &Usage{MemoryBytes: -1}}}})
	if err == nil {
		t.Error("negative memory accepted")
	}
}
