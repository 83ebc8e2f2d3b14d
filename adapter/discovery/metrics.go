package discovery

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	duration    *prometheus.HistogramVec
	lastSuccess *prometheus.GaugeVec
	series      *prometheus.GaugeVec
	entries     *prometheus.GaugeVec
	onDemand    *prometheus.CounterVec
	limited     *prometheus.CounterVec
	carried     *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	const ns, sub = "ebbflow_adapter", "discovery"
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "duration_seconds",
			Help:    "Duration of full metric discoveries (relists) by backend and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"backend", "outcome"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "last_success_timestamp_seconds",
			Help: "Unix time of the last successful relist, by backend.",
		}, []string{"backend"}),
		series: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "series",
			Help: "Series listed by the last successful relist, by backend.",
		}, []string{"backend"}),
		entries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "registry_entries",
			Help: "Metrics currently served, by API (custom entries count each resource and scope).",
		}, []string{"api"}),
		onDemand: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "on_demand_total",
			Help: "On-demand discoveries for metrics not yet registered, by result (done, error, rate_limited, invalid_name, no_rule).",
		}, []string{"result"}),
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: "limit_exceeded_total",
			Help: "Discoveries that failed because Prometheus listed more than a cap allows, by backend and cap (series).",
		}, []string{"backend", "limit"}),
		carried: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: "carried_over_entries",
			Help: "Registry entries kept by the last relist although it did not list their series, because its window reaches into an outage of the backend, by backend.",
		}, []string{"backend"}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.lastSuccess, m.series, m.entries, m.onDemand, m.limited, m.carried} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observeRelist(backend string, d time.Duration, err error) {
	outcome := "success"
	if err != nil {
		outcome = "error"
	} else {
		m.lastSuccess.WithLabelValues(backend).SetToCurrentTime()
	}
	m.duration.WithLabelValues(backend, outcome).Observe(d.Seconds())
}

func (m *metrics) setSeries(backend string, n int) {
	m.series.WithLabelValues(backend).Set(float64(n))
}

func (m *metrics) setCarried(backend string, n int) {
	m.carried.WithLabelValues(backend).Set(float64(n))
}

func (m *metrics) setRegistry(r *Registry) {
	custom, external := r.Len()
	m.entries.WithLabelValues("custom").Set(float64(custom))
	m.entries.WithLabelValues("external").Set(float64(external))
}
