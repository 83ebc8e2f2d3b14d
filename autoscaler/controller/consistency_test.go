package controller

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func TestWriteTracker(t *testing.T) {
	cases := []struct {
		name    string
		written []string
		cached  string
		stale   bool
	}{
		{"no write", nil, "5", false},
		{"cache older", []string{"10"}, "9", true},
		{"cache equal", []string{"10"}, "10", false},
		{"cache newer", []string{"10"}, "11", false},
		{"latest write counts", []string{"10", "12"}, "11", true},
		{"older write ignored", []string{"12", "10"}, "11", true},
		{"incomparable never blocks", []string{"abc"}, "9", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriteTracker()
			for _, rv := range tc.written {
				w.wrote("k", rv)
			}
			if err := w.ensureSeen("k", tc.cached); (err != nil) != tc.stale {
				t.Errorf("ensureSeen = %v, want stale=%v", err, tc.stale)
			}
		})
	}
}

// A reconcile waits until the cache holds its own last status write.
func TestSyncWaitsForOwnWrite(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	hpa.ResourceVersion = "9"
	f.seedHPA(hpa)
	f.kube.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
		out := a.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
		out.ResourceVersion = "10"
		return true, out, nil
	})
	f.build()
	if _, err := f.sync(hpaKey); err != nil || len(f.statusUpdates()) != 1 {
		t.Fatalf("first sync: %v, %d status writes", err, len(f.statusUpdates()))
	}
	if _, err := f.sync(hpaKey); err == nil {
		t.Fatal("second sync ran from a cache older than its write")
	}
	if n := len(f.kube.Actions()) + len(f.scales.Actions()) + len(f.statusUpdates()); n != 0 {
		t.Errorf("%d API calls from a stale cache", n)
	}
	written := hpa.DeepCopy()
	written.ResourceVersion = "10"
	f.seedHPA(written)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatalf("sync after the cache caught up: %v", err)
	}
}
