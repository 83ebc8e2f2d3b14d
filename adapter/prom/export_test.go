package prom

// WithMaxSeriesBytes caps each series object of a series stream; <= 0 keeps
// DefaultMaxSeriesBytes.
func WithMaxSeriesBytes(n int64) HTTPOption {
	return func(c *HTTPClient) {
		if n > 0 {
			c.maxSeries = n
		}
	}
}
