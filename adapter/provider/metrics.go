package provider

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type apiMetrics struct {
	requests *prometheus.HistogramVec
}

func newAPIMetrics(reg prometheus.Registerer) (*apiMetrics, error) {
	m := &apiMetrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ebbflow_adapter", Subsystem: "api", Name: "request_duration_seconds",
			Help:    "Duration of metrics API requests answered by the provider, by API group and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"group", "outcome"}),
	}
	if err := reg.Register(m.requests); err != nil {
		// The custom/external and the resource providers share the histogram.
		var are prometheus.AlreadyRegisteredError
		existing, ok := (*prometheus.HistogramVec)(nil), false
		if errors.As(err, &are) {
			existing, ok = are.ExistingCollector.(*prometheus.HistogramVec)
		}
		if !ok {
			return nil, err
		}
		m.requests = existing
	}
	return m, nil
}

func (m *apiMetrics) observe(group, outcome string, d time.Duration) {
	m.requests.WithLabelValues(group, outcome).Observe(d.Seconds())
}
