package controller

import (
	"container/heap"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// BenchmarkMixedSyncPeriods measures what per-autoscaler sync periods cost:
// N Autoscalers in steady state (one Pods metric each, at target), a third
// at syncPeriodSeconds 5, a third unset (the controller's 15 s), a third at
// 60 (or, with periods=1-15-60, 1 s for the first third), evaluated over five
// simulated minutes. The clock is simulated and the due times follow the
// controller's own requeue delays (evaluation.Spec.NextEvaluation through
// Controller.periods); the clients are counting fakes, and the informer
// sees every status write, as it would. Reported per simulated second:
// metric reads (reads/s; expected: Σ 1/period), kube-apiserver requests
// (api/s: /scale GETs and PUTs, status PUTs, events), and the controller's
// CPU per simulated second (cpu-ms/s). dedup=5s wraps the metrics client
// in the deduplication window ebbflow-autoscaler uses by default (a third of
// the 15 s period).
//
//	go test -run '^$' -bench MixedSyncPeriods -benchtime 1x ./autoscaler/controller/
func BenchmarkMixedSyncPeriods(b *testing.B) {
	for _, tc := range []struct {
		n       int
		periods [3]int32 // 0: unset
		dedup   time.Duration
	}{
		{300, [3]int32{5, 0, 60}, 0},
		{3000, [3]int32{5, 0, 60}, 0},
		{3000, [3]int32{1, 0, 60}, 0},
		{3000, [3]int32{1, 0, 60}, 5 * time.Second},
	} {
		name := fmt.Sprintf("n=%d/periods=%d-15-%d/dedup=%s", tc.n, tc.periods[0], tc.periods[2], tc.dedup)
		b.Run(name, func(b *testing.B) {
			for range b.N {
				runMixedPeriods(b, tc.n, tc.periods, tc.dedup)
			}
		})
	}
}

func runMixedPeriods(b *testing.B, n int, periods [3]int32, dedup time.Duration) {
	b.StopTimer()
	f := newFixture(b)
	f.recorder = record.NewFakeRecorder(n * 10)
	f.metrics.Pods = map[string]replicas.Samples{}
	client := ebbflowfake.NewSimpleClientset()
	informer := ebbflowinformers.NewSharedInformerFactory(client, 0).Autoscaling().V1alpha1().Autoscalers()
	var statusWrites atomic.Int64
	client.PrependReactor("update", "autoscalers", func(a core.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			statusWrites.Add(1)
			_ = informer.Informer().GetIndexer().Update(a.(core.UpdateAction).GetObject())
		}
		return false, nil, nil
	})
	var expected float64 // reads per second
	keys := make([]string, n)
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		f.target(name, 3, 3)
		f.pods(name, 3)
		f.metrics.Pods["qps"+name] = podSamples(name, 10, 10, 10)
		hpa := newHPA(name, name, 1, 10, podsMetric("qps"+name, "10"))
		a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
		p := int32(15)
		if v := periods[i%3]; v > 0 {
			p = v
			a.Spec.SyncPeriodSeconds = &v
		}
		expected += 1 / float64(p)
		if err := client.Tracker().Add(a); err != nil {
			b.Fatal(err)
		}
		if err := informer.Informer().GetIndexer().Add(a); err != nil {
			b.Fatal(err)
		}
		keys[i] = "Autoscaler/ns/" + name
	}
	if dedup > 0 {
		f.deps = func(d *Deps) { d.Metrics = metrics.NewDeduplicated(f.metrics, dedup, f.clock) }
	}
	c := f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
	// Every autoscaler is due once within the first second (as after a
	// start), then after its own delay.
	due := make(dueHeap, n)
	for i, k := range keys {
		due[i] = dueKey{at: start.Add(time.Duration(i) * time.Second / time.Duration(n)), key: k}
	}
	heap.Init(&due)
	const warmup, window = time.Minute, 5 * time.Minute
	var reads0, scale0, status0 int64
	var cpu time.Duration
	measuring := false
	for due[0].at.Before(start.Add(warmup + window)) {
		next := heap.Pop(&due).(dueKey)
		if !measuring && !next.at.Before(start.Add(warmup)) {
			measuring = true
			reads0, scale0, status0 = int64(f.metrics.Calls()), int64(len(f.scales.Actions())), statusWrites.Load()
		}
		f.clock.SetTime(next.at)
		t := time.Now()
		b.StartTimer()
		if _, err := c.sync(context.Background(), next.key); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if measuring {
			cpu += time.Since(t)
		}
		heap.Push(&due, dueKey{at: next.at.Add(c.periods.of(next.key, c.cfg.SyncPeriod)), key: next.key})
	}
	secs := window.Seconds()
	b.ReportMetric((float64(f.metrics.Calls())-float64(reads0))/secs, "reads/s")
	b.ReportMetric(expected, "expected-reads/s")
	api := float64(int64(len(f.scales.Actions()))-scale0) + float64(statusWrites.Load()-status0) + float64(len(f.recorder.Events))
	b.ReportMetric(api/secs, "api/s")
	b.ReportMetric(float64(cpu.Milliseconds())/secs, "cpu-ms/s")
}

type dueKey struct {
	at  time.Time
	key string
}

type dueHeap []dueKey

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueKey)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
