package e2e

import (
	"fmt"
	"strings"
	"time"
)

// queueHistory is the forecast queue's history in OpenMetrics text: one
// sample every step from `from` up to until (both truncated to step), with
// load's value at each sample's time. The forecast e2es backfill it into
// their cluster's Prometheus.
func queueHistory(from, until time.Time, step time.Duration, load func(time.Time) float64) []byte {
	var b strings.Builder
	b.WriteString("# TYPE " + QueueGauge + " gauge\n")
	l := forecastLabels()
	series := fmt.Sprintf(`%s{instance=%q,job=%q,queue=%q}`, QueueGauge, l["instance"], l["job"], l["queue"])
	for ts := from.Truncate(step); !ts.After(until); ts = ts.Add(step) {
		fmt.Fprintf(&b, "%s %g %d\n", series, load(ts), ts.Unix())
	}
	b.WriteString("# EOF\n")
	return []byte(b.String())
}
