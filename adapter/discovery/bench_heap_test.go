package discovery_test

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// How BenchmarkDiscovery measures the heap of one op.

// Heap figures sampled during an op; reading them does not stop the world.
var heapSamples = []string{
	"/memory/classes/heap/objects:bytes", // live plus not-yet-swept dead objects
	"/gc/heap/live:bytes",                // live objects as marked by the last GC
}

// heapPeak is the largest increase of each of heapSamples over its post-GC baseline.
type heapPeak struct{ objects, live uint64 }

func readHeap(s []metrics.Sample) heapPeak {
	metrics.Read(s)
	return heapPeak{s[0].Value.Uint64(), s[1].Value.Uint64()}
}

func newHeapSamples() []metrics.Sample {
	s := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		s[i].Name = name
	}
	return s
}

// measurePeak runs op with the timer on and returns the peak increase of the heap
// figures over a post-GC baseline, sampled every millisecond and once at the end.
// GC and sampler setup are outside the timer.
func measurePeak(b *testing.B, op func()) heapPeak {
	b.StopTimer()
	runtime.GC()
	base := readHeap(newHeapSamples())
	stop, done := make(chan struct{}), make(chan heapPeak)
	go func() {
		s := newHeapSamples()
		var peak heapPeak
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			h := readHeap(s)
			peak = heapPeak{max(peak.objects, h.objects), max(peak.live, h.live)}
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	b.StartTimer()
	op()
	b.StopTimer()
	close(stop)
	peak := <-done
	b.StartTimer()
	return heapPeak{sub(peak.objects, base.objects), sub(peak.live, base.live)}
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func (p heapPeak) max(q heapPeak) heapPeak {
	return heapPeak{max(p.objects, q.objects), max(p.live, q.live)}
}

func (p heapPeak) report(b *testing.B) {
	b.ReportMetric(float64(p.objects), "peak-heap-bytes")
	b.ReportMetric(float64(p.live), "peak-live-bytes")
}
