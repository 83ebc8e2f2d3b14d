package prom

import "github.com/prometheus/client_golang/prometheus"

// NewGuard wraps next, the only backend, as the adapter guards its default
// backend; its self-metrics are registered with reg, with backend="default".
func NewGuard(next Client, opts GuardOptions, reg prometheus.Registerer) (*Guard, error) {
	m, err := NewGuardMetrics(reg)
	if err != nil {
		return nil, err
	}
	return m.Guard(next, opts, "default"), nil
}

// WithMaxSeriesBytes caps each series object of a series stream; <= 0 keeps
// DefaultMaxSeriesBytes.
func WithMaxSeriesBytes(n int64) HTTPOption {
	return func(c *HTTPClient) {
		if n > 0 {
			c.maxSeries = n
		}
	}
}
