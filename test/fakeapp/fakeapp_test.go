package fakeapp

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeSink records the current value of every series.
type fakeSink struct {
	mu     sync.Mutex
	series map[string]float64
}

func newFakeSink() *fakeSink { return &fakeSink{series: map[string]float64{}} }

func key(name string, labels map[string]string) string {
	parts := make([]string, 0, len(labels))
	for k, v := range labels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

func (f *fakeSink) AddCounter(name string, labels map[string]string, d float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series[key(name, labels)] += d
}

func (f *fakeSink) SetGauge(name string, labels map[string]string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.series[key(name, labels)] = v
}

func (f *fakeSink) Delete(name string, labels map[string]string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key(name, labels)
	_, ok := f.series[k]
	delete(f.series, k)
	return ok
}

func (f *fakeSink) get(k string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.series[k]
	return v, ok
}

func (f *fakeSink) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.series)
}

// fakePods is a settable pod view.
type fakePods struct{ ready, notReady []string }

func (f *fakePods) Snapshot() ([]string, map[string]bool) {
	present := map[string]bool{}
	for _, p := range append(append([]string(nil), f.ready...), f.notReady...) {
		present[p] = true
	}
	return append([]string(nil), f.ready...), present
}

func webCounter(pod string) string {
	return key(RequestsMetric, map[string]string{"namespace": "shop", "pod": pod, "service": "web"})
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestStepClosedLoop(t *testing.T) {
	sink := newFakeSink()
	sim, err := New(Config{Sink: sink,
		Services: []Service{{Namespace: "shop", Service: "web", Rate: Constant(40)}},
		Queues:   []Queue{{Name: "orders", Namespace: "shop", Produce: Constant(30), ConsumePerPod: 10, Initial: 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	web, workers := &fakePods{ready: []string{"web-a"}}, &fakePods{}
	views := map[string]Pods{"web": web, "worker": workers}
	i := 0
	if err := sim.attach(func(ns, sel string) (Pods, error) {
		i++
		return views[map[int]string{1: "web", 2: "worker"}[i]], nil
	}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1000, 0)
	sim.begin(t0)
	queue := key(QueueMetric, map[string]string{"queue": "orders"})
	if v, _ := sink.get(queue); v != 5 {
		t.Fatalf("initial queue depth = %v, want 5", v)
	}

	// One pod takes all 40 req/s; no worker lets the queue grow by 30/s.
	sim.Step(t0.Add(time.Second))
	if v, _ := sink.get(webCounter("web-a")); !near(v, 40) {
		t.Errorf("web-a counter = %v, want 40", v)
	}
	if v, _ := sink.get(queue); !near(v, 35) {
		t.Errorf("queue = %v, want 35", v)
	}

	// Scaling up: four pods share the load; four workers drain 40/s > 30/s.
	web.ready = []string{"web-a", "web-b", "web-c", "web-d"}
	workers.ready = []string{"w-1", "w-2", "w-3", "w-4"}
	sim.Step(t0.Add(2 * time.Second))
	if v, _ := sink.get(webCounter("web-a")); !near(v, 50) {
		t.Errorf("web-a counter = %v, want 50", v)
	}
	if v, _ := sink.get(webCounter("web-d")); !near(v, 10) {
		t.Errorf("web-d counter = %v, want 10", v)
	}
	if v, _ := sink.get(queue); !near(v, 25) {
		t.Errorf("queue = %v, want 25", v)
	}
	st := sim.Status()
	if got := st.Services[0]; got.ReadyPods != 4 || !near(got.PerPod, 10) || !near(got.Offered, 40) {
		t.Errorf("service status = %+v", got)
	}
	if got := st.Queues[0]; got.Workers != 4 || !near(got.Depth, 25) {
		t.Errorf("queue status = %+v", got)
	}
	if st.Elapsed != 2*time.Second {
		t.Errorf("elapsed = %v", st.Elapsed)
	}

	// Scaling down: web-d is deleted, web-c is unready (kept, not advanced).
	web.ready, web.notReady = []string{"web-a", "web-b"}, []string{"web-c"}
	sim.Step(t0.Add(3 * time.Second))
	if _, ok := sink.get(webCounter("web-d")); ok {
		t.Error("series of deleted pod web-d still published")
	}
	if v, _ := sink.get(webCounter("web-c")); !near(v, 10) {
		t.Errorf("unready web-c counter = %v, want unchanged 10", v)
	}
	if v, _ := sink.get(webCounter("web-a")); !near(v, 70) {
		t.Errorf("web-a counter = %v, want 70", v)
	}
	// The queue never goes below zero.
	for s := 4; s < 10; s++ {
		sim.Step(t0.Add(time.Duration(s) * time.Second))
	}
	if v, _ := sink.get(queue); v != 0 {
		t.Errorf("queue = %v, want 0", v)
	}

	sim.clear()
	if n := sink.len(); n != 0 {
		t.Errorf("%d series left after clear: %v", n, sink.series)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []Config{
		{},
		{Sink: newFakeSink(), Services: []Service{{Namespace: "a"}}},
		{Sink: newFakeSink(), Services: []Service{{Namespace: "a", Service: "s", Rate: Constant(-1)}}},
		{Sink: newFakeSink(), Queues: []Queue{{Name: "q", Namespace: "a", ConsumePerPod: -1}}},
		{Sink: newFakeSink(), Queues: []Queue{{Namespace: "a"}}},
	}
	for i, cfg := range tests {
		if _, err := New(cfg); err == nil {
			t.Errorf("config %d: New succeeded, want error", i)
		}
	}
}

func pod(name string, phase corev1.PodPhase, ready corev1.ConditionStatus, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Status:     corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestClassify(t *testing.T) {
	ready, present := Classify([]*corev1.Pod{
		pod("c", corev1.PodRunning, corev1.ConditionTrue, false),
		pod("a", corev1.PodRunning, corev1.ConditionTrue, false),
		pod("pending", corev1.PodPending, corev1.ConditionFalse, false),
		pod("unready", corev1.PodRunning, corev1.ConditionFalse, false),
		pod("leaving", corev1.PodRunning, corev1.ConditionTrue, true),
		{ObjectMeta: metav1.ObjectMeta{Name: "nocond"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	})
	if got, want := fmt.Sprint(ready), "[a c]"; got != want {
		t.Errorf("ready = %s, want %s", got, want)
	}
	if len(present) != 6 {
		t.Errorf("present = %v, want 6 pods", present)
	}
}

// TestRun drives Run with a fake clientset and a fake clock: pods created
// after the start are picked up by the informer and share the load.
func TestRun(t *testing.T) {
	client := fake.NewClientset(pod("web-a", corev1.PodRunning, corev1.ConditionTrue, false))
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	sink := newFakeSink()
	sim, err := New(Config{Client: client, Sink: sink, Clock: clk, Interval: time.Second,
		Services: []Service{{Namespace: "shop", Selector: "app=web", Service: "web", Rate: Constant(20)}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()

	waitFor(t, ctx, "ticker", clk.HasWaiters)
	clk.Step(time.Second)
	waitFor(t, ctx, "web-a counter at 20", func() bool { v, _ := sink.get(webCounter("web-a")); return near(v, 20) })

	if _, err := client.CoreV1().Pods("shop").Create(ctx, pod("web-b", corev1.PodRunning, corev1.ConditionTrue, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "web-b in the cache", func() bool {
		clk.Step(time.Second)
		_, ok := sink.get(webCounter("web-b"))
		return ok
	})
	if err := client.CoreV1().Pods("shop").Delete(ctx, "web-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "web-b series removed", func() bool {
		clk.Step(time.Second)
		_, ok := sink.get(webCounter("web-b"))
		return !ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := sink.len(); n != 0 {
		t.Errorf("%d series left after Run returned", n)
	}
}

// waitFor polls cond every 10ms until it holds or ctx ends.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
