package simulate

import (
	"math"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// weekSeries returns 7 days at 15 s steps of a daily cycle (milli-units):
// low at night, high at noon, with a faster wobble.
func weekSeries(steps int, base, amplitude float64) Series {
	s := Series{Values: make([]int64, steps)}
	for i := range s.Values {
		day := 2 * math.Pi * float64(i) / (24 * 60 * 4)
		s.Values[i] = int64(1000 * (base + amplitude*math.Sin(day) + amplitude/5*math.Sin(day*37)))
	}
	return s
}

// BenchmarkReplayWeek replays 7 days at 15 s steps (40,320 evaluations) of
// three metrics — a Pods metric under the load model, an External and an
// Object metric — through the pipeline: the time `ebbflow simulate` spends
// outside Prometheus for such a range.
func BenchmarkReplayWeek(b *testing.B) {
	const steps = 7 * 24 * 60 * 4
	object := autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "web"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "latency_p99"},
		Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: milli(250)},
	}}
	s := spec(2, 60, podsMetric("rps", 50_000), externalMetric("queue", 30_000), object)
	series := []Series{weekSeries(steps, 800, 700), weekSeries(steps, 300, 280), weekSeries(steps, 0.2, 0.1)}
	cfg := config(steps, 10)
	cfg.PodStartup = 30 * time.Second
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(cfg, s, series)
		if err != nil {
			b.Fatal(err)
		}
		if res.Summary.ScaleEvents == 0 {
			b.Fatal("a week of daily cycles scaled nothing")
		}
	}
	b.ReportMetric(float64(steps), "steps/op")
}
