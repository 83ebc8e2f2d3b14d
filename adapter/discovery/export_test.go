package discovery

// SeriesSeen is the number of series streamed to build this registry.
func (r *Registry) SeriesSeen() int {
	if r == nil {
		return 0
	}
	return r.series
}
