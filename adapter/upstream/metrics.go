package upstream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the self-metrics of the upstreams, labelled by upstream name.
type metrics struct {
	requests *prometheus.HistogramVec
	up       *prometheus.GaugeVec
	listed   *prometheus.GaugeVec
	shadowed *prometheus.GaugeVec
	relists  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ebbflow_adapter", Subsystem: "upstream", Name: "request_duration_seconds",
			Help:    "Duration of requests forwarded to an upstream metrics server, by upstream, API group and outcome (success, not_found, bad_request, unavailable).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"upstream", "group", "outcome"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "upstream", Name: "up",
			Help: "1 when the upstream's last discovery of the group succeeded, 0 when it failed (its last good list stays served).",
		}, []string{"upstream", "group"}),
		listed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "upstream", Name: "metrics",
			Help: "Metrics the upstream lists in the group's discovery.",
		}, []string{"upstream", "group"}),
		shadowed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_adapter", Subsystem: "upstream", Name: "shadowed_metrics",
			Help: "Metrics the upstream lists that Ebbflow's own rules or an earlier upstream serve instead (the winner answers them).",
		}, []string{"upstream", "group"}),
		relists: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_adapter", Subsystem: "upstream", Name: "discoveries_total",
			Help: "Discoveries of an upstream's metrics, by upstream, group and outcome (success, error).",
		}, []string{"upstream", "group", "outcome"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.up, m.listed, m.shadowed, m.relists} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(upstream, group, outcome string, d time.Duration) {
	m.requests.WithLabelValues(upstream, group, outcome).Observe(d.Seconds())
}
