package metrics_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/metrics/fake"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// call is one question to the client.
type call func(ctx context.Context, c metrics.Client) error

func resource(ns, sel string, r corev1.ResourceName, container string) call {
	return func(ctx context.Context, c metrics.Client) error {
		_, _, err := c.PodResources(ctx, ns, labels.SelectorFromSet(labels.Set{"app": sel}), r, container)
		return err
	}
}

func pods(ns, metric, sel string, metricSel labels.Selector) call {
	return func(ctx context.Context, c metrics.Client) error {
		_, _, err := c.PodMetric(ctx, ns, metric, labels.SelectorFromSet(labels.Set{"app": sel}), metricSel)
		return err
	}
}

func object(ns, name, metric string) call {
	return func(ctx context.Context, c metrics.Client) error {
		_, _, err := c.ObjectMetric(ctx, ns, metric, autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: name}, labels.Everything())
		return err
	}
}

func external(ns, metric string, sel labels.Selector) call {
	return func(ctx context.Context, c metrics.Client) error {
		_, _, err := c.ExternalMetric(ctx, ns, metric, sel)
		return err
	}
}

func TestDeduplicated(t *testing.T) {
	queue := labels.SelectorFromSet(labels.Set{"queue": "a"})
	cases := []struct {
		name      string
		calls     []call
		advance   time.Duration // between calls
		wantCalls int
	}{
		{"same resource question twice", []call{resource("ns", "web", corev1.ResourceCPU, ""), resource("ns", "web", corev1.ResourceCPU, "")}, 0, 1},
		{"other resource", []call{resource("ns", "web", corev1.ResourceCPU, ""), resource("ns", "web", corev1.ResourceMemory, "")}, 0, 2},
		{"other container", []call{resource("ns", "web", corev1.ResourceCPU, ""), resource("ns", "web", corev1.ResourceCPU, "app")}, 0, 2},
		{"other selector", []call{resource("ns", "web", corev1.ResourceCPU, ""), resource("ns", "api", corev1.ResourceCPU, "")}, 0, 2},
		{"other namespace", []call{pods("a", "qps", "web", nil), pods("b", "qps", "web", nil)}, 0, 2},
		{"same pods metric", []call{pods("a", "qps", "web", nil), pods("a", "qps", "web", labels.Everything())}, 0, 1},
		{"other metric selector", []call{pods("a", "qps", "web", nil), pods("a", "qps", "web", queue)}, 0, 2},
		{"same object", []call{object("ns", "svc", "hits"), object("ns", "svc", "hits"), object("ns", "svc", "hits")}, time.Second, 1},
		{"other object", []call{object("ns", "svc", "hits"), object("ns", "svc2", "hits")}, 0, 2},
		{"same external", []call{external("ns", "depth", queue), external("ns", "depth", queue)}, 4 * time.Second, 1},
		{"expired", []call{external("ns", "depth", queue), external("ns", "depth", queue)}, 5 * time.Second, 2},
		{"errors are shared too", []call{object("ns", "missing", "hits"), object("ns", "missing", "hits")}, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake.Client{
				Resources: map[corev1.ResourceName]replicas.Samples{corev1.ResourceCPU: {"p": {Value: 1}}, corev1.ResourceMemory: {"p": {Value: 2}}},
				Pods:      map[string]replicas.Samples{"qps": {"p": {Value: 3}}},
				Objects:   map[string]int64{"Service/svc/hits": 4, "Service/svc2/hits": 5},
				External:  map[string][]int64{"depth": {6}},
			}
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			d := metrics.NewDeduplicated(f, 5*time.Second, clk)
			for _, c := range tc.calls {
				_ = c(context.Background(), d)
				clk.SetTime(clk.Now().Add(tc.advance))
			}
			if got := f.Calls(); got != tc.wantCalls {
				t.Errorf("calls to the API = %d, want %d", got, tc.wantCalls)
			}
		})
	}
}

func TestDeduplicatedReturnsTheAnswer(t *testing.T) {
	f := &fake.Client{External: map[string][]int64{"depth": {6, 7}}, Objects: map[string]int64{}}
	d := metrics.NewDeduplicated(f, time.Minute, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	for range 2 {
		v, _, err := d.ExternalMetric(context.Background(), "ns", "depth", labels.Everything())
		if err != nil || len(v) != 2 || v[0] != 6 || v[1] != 7 {
			t.Fatalf("got %v, %v", v, err)
		}
		_, _, err = d.ObjectMetric(context.Background(), "ns", "x", autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "a"}, nil)
		if err == nil {
			t.Fatalf("expected the fake's error")
		}
	}
	if f.Calls() != 2 {
		t.Errorf("calls = %d, want 2", f.Calls())
	}
}

func TestDeduplicatedMergesConcurrentCalls(t *testing.T) {
	// The delay outlasts the start of 20 goroutines on a loaded machine (at
	// 50 ms a late one sometimes found the answer gone and asked again).
	f := &fake.Client{Pods: map[string]replicas.Samples{"qps": {"p": {Value: 3}}}, Delay: time.Second}
	// A zero window keeps nothing after the answer, so only merging can
	// explain a single call.
	d := metrics.NewDeduplicated(f, 0, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() { errs <- pods("ns", "qps", "web", nil)(context.Background(), d) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if f.Calls() != 1 {
		t.Errorf("calls = %d, want 1", f.Calls())
	}
	if err := pods("ns", "qps", "web", nil)(context.Background(), d); err != nil || f.Calls() != 2 {
		t.Errorf("after the answer, a zero window must ask again: calls = %d, err = %v", f.Calls(), err)
	}
}

func TestDeduplicatedWaiterCancelled(t *testing.T) {
	f := &fake.Client{Pods: map[string]replicas.Samples{"qps": {"p": {Value: 3}}}, Delay: 200 * time.Millisecond}
	d := metrics.NewDeduplicated(f, time.Minute, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	go func() { _ = pods("ns", "qps", "web", nil)(context.Background(), d) }()
	// The first call is in flight (the fake counts a call before its delay),
	// so the second one waits for it, whatever the machine's load.
	for f.Calls() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := pods("ns", "qps", "web", nil)(ctx, d); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiter error = %v, want deadline exceeded", err)
	}
}

// A read under WithMaxAge reuses no answer older than its age, and never
// one older than the window.
func TestDeduplicatedMaxAge(t *testing.T) {
	queue := labels.SelectorFromSet(labels.Set{"queue": "a"})
	cases := []struct {
		name      string
		age       time.Duration // of the second read; 0: no WithMaxAge
		after     time.Duration // between the two reads
		wantCalls int
	}{
		{"younger than the age", time.Second, 999 * time.Millisecond, 1},
		{"as old as the age", time.Second, time.Second, 2},
		{"older than the age, within the window", time.Second, 4 * time.Second, 2},
		{"without an age the window applies", 0, 4 * time.Second, 1},
		{"an age above the window is the window", time.Minute, 5 * time.Second, 2},
		{"an age above the window, within it", time.Minute, 4 * time.Second, 1},
		{"a negative age reuses nothing done", -time.Second, time.Millisecond, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake.Client{External: map[string][]int64{"depth": {6}}, Objects: map[string]int64{"Service/svc/hits": 4}}
			clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
			d := metrics.NewDeduplicated(f, 5*time.Second, clk)
			ctx := context.Background()
			if tc.age != 0 {
				ctx = metrics.WithMaxAge(ctx, tc.age)
			}
			for _, c := range []call{external("ns", "depth", queue), object("ns", "svc", "hits")} {
				if err := c(context.Background(), d); err != nil {
					t.Fatal(err)
				}
				clk.SetTime(clk.Now().Add(tc.after))
				if err := c(ctx, d); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.Calls(); got != 2*tc.wantCalls {
				t.Errorf("calls to the API = %d, want %d", got, 2*tc.wantCalls)
			}
		})
	}
	// The fresh answer a short age fetched serves the other readers.
	f := &fake.Client{External: map[string][]int64{"depth": {6}}}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	d := metrics.NewDeduplicated(f, 5*time.Second, clk)
	short := metrics.WithMaxAge(context.Background(), time.Second)
	for _, step := range []struct {
		ctx   context.Context
		after time.Duration
		calls int
	}{{context.Background(), 0, 1}, {short, 3 * time.Second, 2}, {context.Background(), 3 * time.Second, 2}, {short, 500 * time.Millisecond, 3}} {
		clk.SetTime(clk.Now().Add(step.after))
		if err := external("ns", "depth", queue)(step.ctx, d); err != nil {
			t.Fatal(err)
		}
		if got := f.Calls(); got != step.calls {
			t.Fatalf("after %v: calls = %d, want %d", step.after, got, step.calls)
		}
	}
}
