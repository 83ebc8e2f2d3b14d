package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/common/model"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/provider"
)

// BenchmarkExternalHistory answers a forecast's daily history (4d1h at 1m,
// 5,821 points) of one series, and of the most series the sample bound
// accepts (18 × 5,821 = 104,778 samples): the provider's share of a history
// request, Prometheus and the HTTP encoding left out.
func BenchmarkExternalHistory(b *testing.B) {
	for _, series := range []int{1, 18} {
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			p, mc := newHistoryProvider(b)
			q := `(sum by (queue) (queue_messages_ready{namespace="ns"}))[4d1h:1m]`
			var m model.Matrix
			for s := range series {
				ss := &model.SampleStream{Metric: model.Metric{"queue": model.LabelValue(fmt.Sprint("q", s))}, Values: make([]model.SamplePair, 5821)}
				for i := range ss.Values {
					ss.Values[i] = model.SamplePair{Timestamp: model.Time(int64(i) * 60_000), Value: model.SampleValue(i % 300)}
				}
				m = append(m, ss)
			}
			mc.answers[q] = m
			sel := historySelB(b, "history.ebbflow.dev/range=4d1h,history.ebbflow.dev/step=1m")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				list, err := p.GetExternalMetric(context.Background(), "ns", sel, provider.ExternalMetricInfo{Metric: "queue_messages_ready"})
				if err != nil || len(list.Items) != series*5821 {
					b.Fatalf("%v, %d items", err, len(list.Items))
				}
			}
		})
	}
}
