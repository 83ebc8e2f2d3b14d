package discovery

import "time"

// A relist lists the series that have a sample in the last MaxAge. Right after a
// Prometheus outage that window can be empty for series that exist: nothing was
// scraped while Prometheus was down, and the first relist after it comes back may
// run before the next scrape. Replacing the registry with that relist would drop
// metrics that HPAs use (404 for one relist interval after every outage longer
// than MaxAge). So after a failed relist of a backend, its successful relists
// keep the entries they do not list as long as their window may still reach into
// the outage: until a relist that starts MaxAge or more after the first
// successful relist that followed the failure. That relist's window lies wholly
// after Prometheus answered again, so it lists every series scraped within it.

// carryOver returns the registry a successful relist of backend stores: fresh,
// plus — while the window of the relist started at start may reach into an
// outage of the backend, and the previous registry came from the same rules —
// the previous entries of backend that fresh lacks. carried counts the latter.
func (d *Discoverer) carryOver(backend string, fresh, previous *Registry, start time.Time, sameRules bool) (reg *Registry, carried int) {
	recovered, ok := d.recovered[backend]
	if !ok {
		return fresh, 0
	}
	if recovered.IsZero() {
		recovered = start // the first success after a failure
		d.recovered[backend] = recovered
	}
	if start.Sub(recovered) >= d.opts.MaxAge {
		delete(d.recovered, backend)
		return fresh, 0
	}
	if !sameRules {
		return fresh, 0
	}
	reg = previous.only(backend).merged(fresh)
	reg.series = fresh.series
	freshCustom, freshExternal := fresh.Len()
	custom, external := reg.Len()
	return reg, custom - freshCustom + external - freshExternal
}

// relistFailed marks backend as failing: its next successful relist is the first
// after an outage.
func (d *Discoverer) relistFailed(backend string) {
	if d.recovered == nil {
		d.recovered = map[string]time.Time{}
	}
	d.recovered[backend] = time.Time{}
}
