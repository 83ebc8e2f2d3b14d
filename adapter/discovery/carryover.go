package discovery

import "time"

// A relist lists the series that have a sample in the last MaxAge. Right after a
// Prometheus outage that window can be empty for series that exist: nothing was
// scraped while Prometheus was down, and the first relist after it comes back may
// run before the next scrape. Replacing the registry with that relist would drop
// metrics that HPAs use (404 for one relist interval after every outage longer
// than MaxAge). So a backend that had a failed relist within the last MaxAge keeps
// the entries its new relist does not list; they are dropped by the first
// successful relist that starts more than MaxAge after that failure. Because
// MaxAge is at least the relist interval, that relist comes at least one interval
// after Prometheus answered again, when every live target has been scraped.

// carryOver returns the registry a successful relist of backend stores: fresh,
// plus — while the backend's last failure is within MaxAge of start and the
// previous registry came from the same rules — the previous entries of backend
// that fresh lacks. carried counts the latter.
func (d *Discoverer) carryOver(backend string, fresh, previous *Registry, start time.Time, sameRules bool) (reg *Registry, carried int) {
	failed, ok := d.lastFailed[backend]
	if !ok {
		return fresh, 0
	}
	if start.Sub(failed) > d.opts.MaxAge {
		delete(d.lastFailed, backend)
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

// relistFailed remembers when backend's relist failed.
func (d *Discoverer) relistFailed(backend string, start time.Time) {
	if d.lastFailed == nil {
		d.lastFailed = map[string]time.Time{}
	}
	d.lastFailed[backend] = start
}
