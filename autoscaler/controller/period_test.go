package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// autoscalerFixture is a fixture over Autoscalers named after their targets
// (each with 2 pods at target), changed by edit before they are seeded.
func autoscalerFixture(t *testing.T, edit func(*v1alpha1.Autoscaler), names ...string) *fixture {
	t.Helper()
	f := newFixture(t)
	f.metrics.Pods = map[string]replicas.Samples{}
	var objs []*v1alpha1.Autoscaler
	for _, name := range names {
		f.target(name, 2, 2)
		f.pods(name, 2)
		hpa := newHPA(name, name, 1, 10, podsMetric("qps", "10"))
		a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
		edit(a)
		objs = append(objs, a)
	}
	f.metrics.Pods["qps"] = podSamples("web", 10, 10)
	client := ebbflowfake.NewSimpleClientset()
	factory := ebbflowinformers.NewSharedInformerFactory(client, 0)
	informer := factory.Autoscaling().V1alpha1().Autoscalers()
	for _, a := range objs {
		if _, err := client.AutoscalingV1alpha1().Autoscalers("ns").Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := informer.Informer().GetIndexer().Add(a); err != nil {
			t.Fatal(err)
		}
	}
	f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
	return f
}

// Each Autoscaler comes back after its own spec.syncPeriodSeconds; one
// without waits the controller's period.
func TestRequeuePerSyncPeriod(t *testing.T) {
	periods := map[string]int32{"fast": 5, "batch": 60}
	f := autoscalerFixture(t, func(a *v1alpha1.Autoscaler) {
		if p, ok := periods[a.Name]; ok {
			a.Spec.SyncPeriodSeconds = &p
		}
	}, "fast", "default", "batch")
	c := f.ctrl
	defer c.queue.ShutDown()
	for _, name := range []string{"fast", "default", "batch"} {
		c.enqueueAfter("Autoscaler/ns/"+name, 0)
	}
	for range 3 {
		c.processNextWorkItem(context.Background())
	}
	// Every 5 s for two minutes, exactly the keys whose period divides the
	// time are due.
	all := map[string]int{"fast": 5, "default": 15, "batch": 60}
	for at := 5; at <= 120; at += 5 {
		f.clock.Step(5 * time.Second)
		var want []string
		for name, p := range all {
			if at%p == 0 {
				want = append(want, "Autoscaler/ns/"+name)
			}
		}
		if got := drain(c, len(want)); !sameSet(got, want) {
			t.Fatalf("at %d s: due %v, want %v", at, got, want)
		}
	}
}

// A schedule that starts before the period is over brings the evaluation
// forward to its start; the self-metric shows the floor.
func TestRequeueAtScheduleStart(t *testing.T) {
	p := int32(600)
	startAt := start.Add(90 * time.Second) // the fixture's clock starts at 06:00:00 UTC
	f := autoscalerFixture(t, func(a *v1alpha1.Autoscaler) {
		a.Spec.SyncPeriodSeconds = &p
		a.Spec.Schedules = []v1alpha1.ScheduleSpec{{Name: "open", Cron: "1 6 * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 4,
			Ramp: &metav1.Duration{Duration: 30 * time.Second}}}
	}, "web")
	reg := prometheus.NewRegistry()
	self, err := NewSelfMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := f.ctrl
	c.deps.SelfMetrics = self
	defer c.queue.ShutDown()
	key := "Autoscaler/ns/web"
	c.enqueueAfter(key, 0)
	c.processNextWorkItem(context.Background())
	if d := c.periods.of(key, 0); d != 30*time.Second {
		t.Fatalf("next evaluation in %s, want 30 s (the ramp starts at 06:00:30)", d)
	}
	floor := func() float64 { return testutil.ToFloat64(self.floors.WithLabelValues("Autoscaler", "ns", "web")) }
	if floor() != 0 {
		t.Errorf("floor gauge %v before the ramp", floor())
	}
	f.clock.SetTime(startAt.Add(-30 * time.Second))
	if got := drain(c, 1); len(got) != 1 {
		t.Fatalf("not requeued at the ramp's start")
	}
	f.clock.SetTime(startAt)
	f.metrics.Timestamp = startAt
	c.enqueueAfter(key, 0)
	c.processNextWorkItem(context.Background())
	if got := f.scaleUpdates(); len(got) == 0 || got[len(got)-1] != 4 {
		t.Errorf("scale updates %v, want the floor 4 at the start", got)
	}
	if floor() != 4 {
		t.Errorf("floor gauge %v at the start, want 4", floor())
	}
	if d := c.periods.of(key, 0); d != 10*time.Minute {
		t.Errorf("next evaluation in %s during the schedule, want the period 10m", d)
	}
}

// drain evaluates n due keys, or fewer when no more come within a short
// time, requeues them as processNextWorkItem does and returns them.
func drain(c *Controller, n int) []string {
	var got []string
	for len(got) < n {
		if !waitLen(c, 1) {
			break
		}
		key, _ := c.queue.Get()
		got = append(got, key)
		c.queue.Done(key)
		c.queue.Forget(key)
		if _, err := c.sync(context.Background(), key); err == nil {
			c.enqueueAfter(key, c.periods.of(key, c.cfg.SyncPeriod))
		}
	}
	return got
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, v := range seen {
		if v != 0 {
			return false
		}
	}
	return true
}

// Through the deduplicating client (5 s window), an autoscaler evaluated
// every second reads a value at most a second old; one at the controller's
// 15 s period still shares answers within the window.
func TestDedupWindowNeverOverSyncPeriod(t *testing.T) {
	one := int32(1)
	f := autoscalerFixture(t, func(a *v1alpha1.Autoscaler) {
		if a.Name == "fast" {
			a.Spec.SyncPeriodSeconds = &one
		}
	}, "fast", "slow")
	f.ctrl.deps.Metrics = metrics.NewDeduplicated(f.metrics, 5*time.Second, f.clock)
	calls := map[string]int{}
	for _, name := range []string{"fast", "slow"} {
		before := f.metrics.Calls()
		for range 3 {
			if _, err := f.sync("Autoscaler/ns/" + name); err != nil {
				t.Fatal(err)
			}
			f.clock.Step(time.Second)
		}
		calls[name] = f.metrics.Calls() - before
	}
	if calls["fast"] != 3 || calls["slow"] != 1 {
		t.Fatalf("metric reads over 3 s: %v, want fast 3 (its 1 s period), slow 1 (the 5 s window)", calls)
	}
}

// A drop-in HPA's sync period is its annotation; an invalid value is a
// Warning event and the controller's period applies.
func TestDropInSyncPeriodAnnotation(t *testing.T) {
	for _, tt := range []struct {
		value   string
		due     time.Duration // first time the key is due again
		warning bool
	}{
		{value: "5", due: 5 * time.Second},
		{value: "60", due: 60 * time.Second},
		{value: "0", due: 15 * time.Second, warning: true},
		{value: "5s", due: 15 * time.Second, warning: true},
		{value: "3601", due: 15 * time.Second, warning: true},
	} {
		t.Run(tt.value, func(t *testing.T) {
			f := newFixture(t)
			webHPA(f, map[string]string{v1alpha1.SyncPeriodAnnotation: tt.value})
			f.build()
			c := f.ctrl
			defer c.queue.ShutDown()
			c.enqueueAfter(hpaKey, 0)
			c.processNextWorkItem(context.Background())
			warned := false
			for _, e := range f.events() {
				warned = warned || strings.HasPrefix(e, "Warning InvalidAnnotation annotation "+v1alpha1.SyncPeriodAnnotation)
			}
			if warned != tt.warning {
				t.Errorf("events %q: warning %v, want %v", f.events(), warned, tt.warning)
			}
			f.clock.Step(tt.due - time.Second)
			if got := drain(c, 1); len(got) != 0 {
				t.Fatalf("due %v a second early", got)
			}
			f.clock.Step(time.Second)
			if got := drain(c, 1); !sameSet(got, []string{hpaKey}) {
				t.Fatalf("after %v: due %v, want the HPA", tt.due, got)
			}
		})
	}
}
