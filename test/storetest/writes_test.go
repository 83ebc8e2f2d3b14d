package storetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// writerCounters are the counters of Prometheus' remote write that say what
// became of the samples it read from its WAL: sent, retried after a
// recoverable error, failed (a non-recoverable answer, or dropped from the
// queues when a shard had to stop), dropped (relabelling, sample age).
var writerCounters = []string{
	"prometheus_remote_storage_samples_total",
	"prometheus_remote_storage_samples_retried_total",
	"prometheus_remote_storage_samples_failed_total",
	"prometheus_remote_storage_samples_dropped_total",
	"prometheus_remote_storage_enqueue_retries_total",
}

// storeCounters are the store's own counters of samples it refused, by
// reason: Mimir's cortex_discarded_samples_total, VictoriaMetrics'
// vm_rows_ignored_total.
var storeCounters = map[Kind]string{
	Mimir:           "cortex_discarded_samples_total",
	VictoriaMetrics: "vm_rows_ignored_total",
}

// writeSample is one reading of the writer's and the store's metrics.
type writeSample struct {
	at     time.Time
	values map[string]float64 // writer counters summed over labels; store counters by reason
	lag    float64            // newest sample read from the WAL minus the newest sent, seconds
	shards float64
}

// writeWatch reads Prometheus' and the store's /metrics every second until
// ctx ends, so that each kill's writes can be told apart.
type writeWatch struct {
	mu      sync.Mutex
	samples []writeSample
}

// watchWrites starts a writeWatch over e; it stops with ctx.
func watchWrites(ctx context.Context, e *env) *writeWatch {
	w := &writeWatch{}
	storeMetrics := "http://" + e.store.addr() + "/metrics"
	go func() {
		for ctx.Err() == nil {
			s := writeSample{at: time.Now(), values: map[string]float64{}}
			if m, err := scrapeMetrics(e.prom.URL() + "/metrics"); err == nil {
				for _, name := range writerCounters {
					s.values[name] = sumOf(m, name)
				}
				s.lag = sumOf(m, "prometheus_remote_storage_highest_timestamp_in_seconds") -
					sumOf(m, "prometheus_remote_storage_queue_highest_sent_timestamp_seconds")
				s.shards = sumOf(m, "prometheus_remote_storage_shards")
			}
			if m, err := scrapeMetrics(storeMetrics); err == nil { // fails while the store is down
				for k, v := range m {
					if strings.HasPrefix(k, storeCounters[e.store.Kind()]) {
						s.values["store "+reasonOf(k)] += v
					}
				}
			}
			w.mu.Lock()
			w.samples = append(w.samples, s)
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return w
}

// between summarises [from, to): each counter's increase (a store's
// counters restart at its restart: increases are summed piecewise), the
// highest send lag and the most shards.
func (w *writeWatch) between(from, to time.Time) (increase map[string]float64, maxLag, maxShards float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	increase = map[string]float64{}
	last := map[string]float64{}
	first := true
	for _, s := range w.samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		maxLag, maxShards = max(maxLag, s.lag), max(maxShards, s.shards)
		for k, v := range s.values {
			p, seen := last[k]
			switch {
			case seen && v >= p:
				increase[k] += v - p
			case seen || !first && strings.HasPrefix(k, "store "):
				increase[k] += v // restarted with the store, or a reason first counted
			}
			last[k] = v
		}
		first = false
	}
	return increase, maxLag, maxShards
}

// scrapeMetrics reads a text exposition into series → value.
func scrapeMetrics(url string) (map[string]float64, error) {
	resp, err := loopback.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return parseExposition(resp.Body)
}

// parseExposition parses the lines "series value" of the text format
// (comments skipped, no timestamps expected).
func parseExposition(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// sumOf sums the series of metric name (exactly that name, any labels).
func sumOf(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}

// reasonOf is the reason label of a series, or "all".
func reasonOf(series string) string {
	_, after, ok := strings.Cut(series, `reason="`)
	if !ok {
		return "all"
	}
	reason, _, _ := strings.Cut(after, `"`)
	return reason
}

// hole is a stretch of a series with no sample where the scrape interval
// promised some.
type hole struct {
	pod      string
	from, to time.Time // the samples either side
	missing  int       // scrapes missing
}

// kill is the index of the kill a hole belongs to: the kill inside it (a
// store that lost what it had acknowledged before the kill; the sample
// after the hole may be one scraped just before the kill, resent after
// the restart: a few seconds of slack), else the last kill before it; -1
// for none.
func (h hole) kill(kills []time.Time) int {
	const slack = 3 * time.Second
	last := -1
	for i, at := range kills {
		if !at.Before(h.from) && !at.After(h.to.Add(slack)) {
			return i
		}
		if at.Before(h.from) {
			last = i
		}
	}
	return last
}

// findHoles reads the raw samples of the workload's request counters back
// through api over [from, to] and returns every gap longer than 1.5 scrape
// intervals (1 s).
func findHoles(ctx context.Context, api v1.API, from, to time.Time) ([]hole, error) {
	q := fmt.Sprintf(`http_requests_total{namespace="ns1"}[%ds]`, int(math.Ceil(to.Sub(from).Seconds())))
	v, _, err := api.Query(ctx, q, to)
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok || len(m) == 0 {
		return nil, fmt.Errorf("raw samples: answer %v", v)
	}
	var holes []hole
	for _, ss := range m {
		pod := string(ss.Metric["pod"])
		for i := 1; i < len(ss.Values); i++ {
			gap := ss.Values[i].Timestamp.Sub(ss.Values[i-1].Timestamp)
			if gap > 1500*time.Millisecond {
				holes = append(holes, hole{pod: pod, from: ss.Values[i-1].Timestamp.Time(), to: ss.Values[i].Timestamp.Time(),
					missing: int(math.Round(gap.Seconds())) - 1})
			}
		}
	}
	sort.Slice(holes, func(i, j int) bool { return holes[i].from.Before(holes[j].from) })
	return holes, nil
}

// lostHoles are the store's holes where Prometheus has the samples: those
// it scraped and its remote write did not bring into the store (a missed
// scrape is a hole in both, and not the store's). Prometheus scrapes all
// along, outages included, so once the writers have caught up a hole in
// the store alone is samples lost.
func lostHoles(ctx context.Context, e *env, from, to time.Time) ([]hole, error) {
	inStore, err := findHoles(ctx, e.store.API(), from, to)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.store.Kind(), err)
	}
	inProm, err := findHoles(ctx, e.prom.API(), from, to)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	var lost []hole
	for _, h := range inStore {
		if !overHole(inProm, h.pod, h.from, h.to) {
			lost = append(lost, h)
		}
	}
	return lost, nil
}

// overHole reports whether pod's samples have a hole reaching into
// [from, to].
func overHole(holes []hole, pod string, from, to time.Time) bool {
	for _, h := range holes {
		if h.pod == pod && h.to.After(from) && h.from.Before(to) {
			return true
		}
	}
	return false
}

// writerLog returns the lines of Prometheus' log about remote write that
// tell what happened to batches (retries, Retry-After, drops, resharding)
// between from and to, at most n of them, and how many there were.
func writerLog(path string, from, to time.Time, n int) ([]string, int) {
	f, err := os.Open(path)
	if err != nil {
		return []string{"(log unavailable: " + err.Error() + ")"}, 0
	}
	defer f.Close()
	var lines []string
	count := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "remote") && !strings.Contains(line, "queue") {
			continue
		}
		_, after, ok := strings.Cut(line, "time=")
		if !ok {
			continue
		}
		ts, _, _ := strings.Cut(after, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(from) || !at.Before(to) {
			continue
		}
		count++
		if len(lines) < n {
			lines = append(lines, line)
		}
	}
	return lines, count
}

// logWrites logs, for the time before the first kill and for each kill
// until the next, what Prometheus' remote write and the store counted, the
// holes the store kept and Prometheus' log lines about remote write (lines
// starting WRITES).
func logWrites(t *testing.T, e *env, w *writeWatch, lost []hole, kills []time.Time) {
	t.Helper()
	k := e.store.Kind()
	bounds := append([]time.Time{{}}, kills...)
	for i, from := range bounds {
		to := time.Now()
		if i+1 < len(bounds) {
			to = bounds[i+1]
		}
		name := "before the kills"
		if i > 0 {
			name = fmt.Sprintf("kill %d", i)
		}
		inc, lag, shards := w.between(from, to)
		keys := make([]string, 0, len(inc))
		for key := range inc {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, key := range keys {
			fmt.Fprintf(&b, " %s=%.0f", strings.TrimPrefix(key, "prometheus_remote_storage_"), inc[key])
		}
		t.Logf("WRITES %s %s: increases%s; send lag up to %.0f s; shards up to %.0f", k, name, b.String(), lag, shards)
		for _, h := range lost {
			if i > 0 && h.kill(kills) == i-1 {
				t.Logf("WRITES %s %s: %s lost %d samples after %s (%v from the kill), next %s",
					k, name, h.pod, h.missing, h.from.Format("15:04:05.000"), h.from.Sub(from).Round(time.Millisecond), h.to.Format("15:04:05.000"))
			}
		}
		lines, n := writerLog(e.prom.LogPath(), from, to, 12)
		t.Logf("WRITES %s %s: %d lines of Prometheus' log about remote write", k, name, n)
		for _, l := range lines {
			t.Logf("WRITES %s %s:   %s", k, name, l)
		}
	}
}

// Why a guarded rate read wrong.
type cause int

const (
	causeLate   cause = iota // the store has the window's samples now, and they give the true rate: they had not arrived (a guard that failed)
	causeLost                // the store lost samples in the window (overLost)
	causeScrape              // Prometheus' own samples give the same wrong rate: the scrapes' timestamps and values disagree (an overloaded machine), not the store
	causes
)

var causeNames = [causes]string{"late", "lost", "scrape"}

// attribute says why the guarded read rd read wrong: it evaluates the same
// window on Prometheus' own TSDB and, now that the writers have caught up,
// on the store.
func attribute(ctx context.Context, e *env, lost []hole, rd read) (cause, string) {
	if overLost(lost, rd) {
		return causeLost, "samples lost in the window"
	}
	pod := rd.pods[0]
	var i int
	fmt.Sscanf(pod, "web-%d", &i)
	served := 10 * float64(i+1)
	at := rd.at.Add(-rd.took / 2)
	q := fmt.Sprintf(`rate(http_requests_total{namespace="ns1",pod=%q}[15s] offset 5s)`, pod)
	value := func(api v1.API) string {
		v, _, err := api.Query(ctx, q, at)
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 {
			return fmt.Sprintf("%.4g", float64(vec[0].Value))
		}
		return fmt.Sprintf("none (%v)", err)
	}
	inProm, inStore := value(e.prom.API()), value(e.store.API())
	detail := fmt.Sprintf("%s serving %.0f/s: the window's rate from Prometheus' own samples %s, from the store's now %s", pod, served, inProm, inStore)
	if p, err := strconv.ParseFloat(inProm, 64); err == nil && !near(p, served) {
		return causeScrape, detail
	}
	return causeLate, detail
}
