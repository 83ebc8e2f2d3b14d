package controller

import (
	"fmt"
	"testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// BenchmarkSyncSteady measures one evaluation that changes nothing (the
// common case) among many autoscalers in one namespace, with fake clients:
// it bounds the controller's own cost per evaluation.
func BenchmarkSyncSteady(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("autoscalers=%d", n), func(b *testing.B) {
			f := newFixture(b)
			f.metrics.Pods = map[string]replicas.Samples{}
			keys := make([]string, n)
			for i := range n {
				name := fmt.Sprintf("w%d", i)
				f.target(name, 3, 3)
				f.pods(name, 3)
				f.metrics.Pods["qps"+name] = podSamples(name, 10, 10, 10)
				f.seedHPA(newHPA(name, name, 1, 10, podsMetric("qps"+name, "10")))
				keys[i] = "HorizontalPodAutoscaler/ns/" + name
			}
			f.build()
			for _, k := range keys {
				if _, err := f.sync(k); err != nil {
					b.Fatal(err)
				}
				f.seedHPA(f.statusUpdates()[0]) // the informer sees the write
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := f.ctrl.sync(b.Context(), keys[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
