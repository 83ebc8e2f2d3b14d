package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
)

// killPlan is how often each store is killed and for how long it stays
// down, and the Retry-After bound of Mimir's distributor: in make test one
// 5 s outage and a 12 s bound (so the run stays short); make test-stores sets
// EBBFLOW_STORE_KILLS, EBBFLOW_STORE_OUTAGE and EBBFLOW_STORE_MIMIR_DEFAULTS=1
// (Mimir's own bound, 96 s).
func killPlan(t *testing.T) (kills int, outage time.Duration, mimirArgs []string, retryAfter time.Duration) {
	kills, outage = 1, 5*time.Second
	mimirArgs, retryAfter = []string{"-distributor.retry-after-header.max-backoff=12s"}, 12*time.Second
	if os.Getenv("EBBFLOW_STORE_MIMIR_DEFAULTS") == "1" {
		mimirArgs, retryAfter = nil, 96*time.Second
	}
	if v := os.Getenv("EBBFLOW_STORE_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 20 {
			t.Fatalf("EBBFLOW_STORE_KILLS=%q: want 1..20", v)
		}
		kills = n
	}
	if v := os.Getenv("EBBFLOW_STORE_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 5*time.Minute {
			t.Fatalf("EBBFLOW_STORE_OUTAGE=%q: want 1s..5m", v)
		}
		outage = d
	}
	return kills, outage, mimirArgs, retryAfter
}

// What one read reads.
type readKind int

const (
	readRate         readKind = iota // pods' rate (http_requests_per_second)
	readFreshRate                    // pods' rate, fresh samples only (..._fresh)
	readCompleteRate                 // pods' rate, fresh and over a complete window (..._complete)
	readQueue                        // the orders queue (external)
	readKinds
)

var readNames = [readKinds]string{"rate", "fresh rate", "complete rate", "queue"}

// Outcome of one read.
type outcome int

const (
	good   outcome = iota // the workload's values
	failed                // an error or pods left out: the HPA does not scale down on it
	wrong                 // 200 with a value the workload never had (a rate reading low)
)

// window is where a guarded rate's samples lie relative to the read:
// [15s] offset 5s, and a second of slack for the time the read took.
const (
	windowStart = 21 * time.Second
	windowEnd   = 4 * time.Second
)

// read is one read of the load.
type read struct {
	at      time.Time
	took    time.Duration
	kind    readKind
	outcome outcome
	problem string
	low     float64 // a wrong rate's lowest value over the served rate
	pods    []string
}

// notGood says whether a read moves recovery: a failed read of any kind,
// or a wrong one of a guarded rate or the queue (the plain rate reads low
// whenever the writers lag, before any kill too).
func notGood(rd read) bool {
	return rd.outcome == failed || rd.outcome == wrong && rd.kind != readRate
}

// readLog is the reads so far, shared by the readers and the test.
type readLog struct {
	mu    sync.Mutex
	reads []read
}

func (l *readLog) add(rd read) {
	l.mu.Lock()
	l.reads = append(l.reads, rd)
	l.mu.Unlock()
}

// goodFor is how long the reads have been good (notGood false) since the
// later of since and the last read that was not, up to the latest read.
func (l *readLog) goodFor(since time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	from, latest := since, time.Time{}
	for _, rd := range l.reads {
		if rd.at.After(latest) {
			latest = rd.at
		}
		if notGood(rd) && rd.at.After(from) {
			from = rd.at
		}
	}
	return latest.Sub(from)
}

// load reads through the adapter from readers goroutines, each every 100 ms
// and each read the next kind, into l until ctx ends, and returns the reads
// in time order.
func load(ctx context.Context, s *stack, readers int, l *readLog) []read {
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				l.add(readOnce(s, readKind((r+i)%int(readKinds))))
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	all := slices.Clone(l.reads)
	slices.SortFunc(all, func(a, b read) int { return a.at.Compare(b.at) })
	return all
}

// goodHold is how long the reads must stay good after they recovered from a
// kill: the test reads on until they have, or until the recovery bound and
// goodHold have passed since the store was ready again, and fails a kill
// whose reads did not stay good for goodHold after their last failure.
const goodHold = 10 * time.Second

// recoveryBound is how long after the store is ready again reads may still
// fail or read wrong: the writers' longest back-off and 30 s.
func recoveryBound(retryAfter time.Duration) time.Duration { return retryAfter + 30*time.Second }

// waitGood returns once the reads have been good for goodHold since ready,
// or when the recovery bound and goodHold have passed.
func waitGood(l *readLog, ready time.Time, retryAfter time.Duration) {
	deadline := ready.Add(recoveryBound(retryAfter) + goodHold)
	for l.goodFor(ready) < goodHold && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
}

// readOnce reads one metric and judges the answer.
func readOnce(s *stack, k readKind) read {
	begin := time.Now()
	rd := read{kind: k}
	switch k {
	case readRate, readFreshRate, readCompleteRate:
		name := "http_requests_per_second"
		switch k {
		case readFreshRate:
			name += "_fresh"
		case readCompleteRate:
			name += "_complete"
		}
		var list cmv1beta2.MetricValueList
		code := getQuiet(s.metrics.URL+"/apis/custom.metrics.k8s.io/v1beta2/namespaces/ns1/pods/*/"+name+"?labelSelector=app%3Dweb", &list)
		switch {
		case code != 200:
			rd.outcome, rd.problem = failed, "status "+strconv.Itoa(code)
		case len(list.Items) != 5:
			rd.outcome, rd.problem = failed, fmt.Sprintf("%d of 5 pods", len(list.Items))
		}
		for _, it := range list.Items {
			var i int
			fmt.Sscanf(it.DescribedObject.Name, "web-%d", &i)
			if v := it.Value.AsApproximateFloat64(); !near(v, 10*float64(i+1)) {
				if rd.outcome != wrong {
					rd.problem = ""
				}
				rd.outcome, rd.problem = wrong, rd.problem+fmt.Sprintf("%s at %.4g/s, serving %d/s; ", it.DescribedObject.Name, v, 10*(i+1))
				rd.pods = append(rd.pods, it.DescribedObject.Name)
				if r := v / (10 * float64(i+1)); rd.low == 0 || r < rd.low {
					rd.low = r
				}
			}
		}
	case readQueue:
		var list emv1beta1.ExternalMetricValueList
		code := getQuiet(s.metrics.URL+"/apis/external.metrics.k8s.io/v1beta1/namespaces/default/queue_messages_ready?labelSelector="+url.QueryEscape("queue=orders"), &list)
		switch {
		case code != 200 || len(list.Items) == 0:
			rd.outcome, rd.problem = failed, fmt.Sprintf("status %d, %d values", code, len(list.Items))
		case len(list.Items) != 1 || list.Items[0].Value.Value() != 250:
			rd.outcome, rd.problem = wrong, fmt.Sprintf("orders %+v", list.Items)
		}
	}
	rd.at, rd.took = time.Now(), time.Since(begin)
	return rd
}

// killResult is what one kill cost.
type killResult struct {
	reads    int
	failed   [readKinds]int // per kind, from the kill to the next kill (or the end)
	wrong    [readKinds]int
	low      float64                // the lowest wrong rate over the served rate
	startup  time.Duration          // restart until the store answered ready
	recovery time.Duration          // ready until the last read that was not good (the plain rate's and those wrong as scraped aside)
	caughtUp time.Duration          // ready until the outage's samples were in the store
	lost     int                    // samples Prometheus scraped that never reached the store
	why      [readKinds][causes]int // wrong guarded reads by cause
}

// TestStoreKilledUnderLoad kills the store (SIGKILL) while the adapter reads
// through it, restarts it after an outage and measures the reads that failed
// or read wrong, when reads recover, and when Prometheus' remote write has
// resent the outage's samples. It fails on a wrong read of the complete rate
// or the queue, of the fresh rate from VictoriaMetrics (report says which
// wrong reads are excused), on a failed read before the first kill, when
// reads do not recover within the writers' longest back-off and 30 s, and
// when they were not seen good for goodHold after recovering: the readers
// go on after each kill until they have been (or the bound has passed), so
// an adapter that never recovers fails.
func TestStoreKilledUnderLoad(t *testing.T) {
	t.Parallel()
	kills, outage, mimirArgs, retryAfter := killPlan(t)
	for _, k := range kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			var e *env
			if k == Mimir {
				e = startEnv(t, k, mimirArgs...)
			} else {
				e = startEnv(t, k)
			}
			s := newStack(t, adapterClient(t, e.store))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			writes := watchWrites(ctx, e)
			done := make(chan []read)
			var rlog readLog
			go func() { done <- load(ctx, s, 8, &rlog) }()
			time.Sleep(5 * time.Second)
			results := make([]killResult, kills)
			marks := make([]time.Time, kills) // kill times
			readies := make([]time.Time, kills)
			for i := range kills {
				marks[i] = time.Now()
				results[i], readies[i] = killOnce(t, e, outage, retryAfter)
				waitGood(&rlog, readies[i], retryAfter)
			}
			cancel()
			reads := <-done
			hctx, hcancel := context.WithTimeout(context.Background(), time.Minute)
			defer hcancel()
			lost, err := lostHoles(hctx, e, marks[0].Add(-30*time.Second), time.Now())
			if err != nil {
				t.Fatalf("raw samples: %v", err)
			}
			why := make(map[int]cause)
			for i, rd := range reads {
				if rd.outcome == wrong && (rd.kind == readFreshRate || rd.kind == readCompleteRate) {
					c, detail := attribute(hctx, e, lost, rd)
					why[i] = c
					t.Logf("%s: %s read at %s wrong (%s): %s; %s", k, readNames[rd.kind], rd.at.Format(time.RFC3339Nano), causeNames[c], rd.problem, detail)
				}
			}
			report(t, k, reads, lost, why, marks, readies, results, outage, retryAfter)
			logWrites(t, e, writes, lost, marks)
		})
	}
}

// killOnce kills the store, keeps it down for outage, restarts it and waits
// until the outage's samples are in it. It returns when the store was ready.
func killOnce(t *testing.T, e *env, outage, retryAfter time.Duration) (killResult, time.Time) {
	t.Helper()
	killed := time.Now()
	e.store.Kill()
	time.Sleep(outage)
	ctx, cancel := context.WithTimeout(context.Background(), 2*retryAfter+2*time.Minute)
	defer cancel()
	if err := e.store.Restart(ctx); err != nil {
		t.Fatalf("restart %s: %v", e.store.Kind(), err)
	}
	ready := time.Now()
	r := killResult{startup: e.store.ReadyAfter()}
	// One sample a second was scraped during the outage: it is in the store
	// once the count over the outage's window, evaluated at its end, is full.
	window := ready.Sub(killed)
	q := fmt.Sprintf(`count_over_time(worker_inflight{namespace="ns1",pod="worker-0"}[%dms])`, window.Milliseconds())
	want := float64(int(window.Seconds()) - 2)
	for {
		v, _, err := e.store.API().Query(ctx, q, ready)
		if vec, ok := v.(model.Vector); err == nil && ok && len(vec) == 1 && float64(vec[0].Value) >= want {
			r.caughtUp = time.Since(ready)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: the outage's samples never arrived (%v, %v)", e.store.Kind(), v, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return r, ready
}

// overLost reports whether every pod a guarded rate read wrong had lost
// samples in the read's window: the store's data loss, which a freshness
// guard cannot see (the newest samples are there), rather than samples
// that had not arrived yet.
func overLost(lost []hole, rd read) bool {
	begin := rd.at.Add(-rd.took)
	for _, pod := range rd.pods {
		if !overHole(lost, pod, begin.Add(-windowStart), begin.Add(-windowEnd)) {
			return false
		}
	}
	return len(rd.pods) > 0
}

// report counts the reads around each kill, fails on what must not happen
// and logs the figures (lines starting REPORT). why holds the cause of each
// wrong guarded read (by index in reads). A wrong read fails the test when
// it is of the queue, when the fresh rate read wrong over a window whose
// samples were late (the guard's own failure) from VictoriaMetrics, and when
// the complete rate read wrong but for scrapes whose values Prometheus
// itself holds wrong; a fresh rate read wrong over lost samples is the
// store's loss, and over late samples from Mimir the race the count guard
// closes (docs/stores.md): both counted.
func report(t *testing.T, k Kind, reads []read, lost []hole, why map[int]cause, kills, readies []time.Time, results []killResult, outage, retryAfter time.Duration) {
	var lat []time.Duration
	plainLow := 0
	for j, rd := range reads {
		if rd.at.Before(kills[0]) {
			switch {
			case rd.outcome == wrong && rd.kind == readRate:
				plainLow++ // a window ending now, late by the writers' batching
			case rd.outcome != good:
				t.Errorf("%s: a %s read before any kill was not good (%s)", k, readNames[rd.kind], rd.problem)
			}
			lat = append(lat, rd.took)
		}
		c, guarded := why[j]
		// The freshness guard alone can pass over a window Mimir has not
		// filled yet (its ingesters read without isolation: docs/stores.md);
		// the count guard, the documented rule, must hold on both stores.
		freshOnly := rd.kind == readFreshRate && (c == causeLost || k == Mimir && c == causeLate)
		excused := guarded && (c == causeScrape || freshOnly)
		if rd.outcome == wrong && rd.kind != readRate && !excused {
			since := "before the first kill"
			for i := range kills {
				if rd.at.After(readies[i]) {
					since = fmt.Sprintf("%v after the store was ready again (kill %d)", rd.at.Sub(readies[i]).Round(time.Millisecond), i+1)
				}
			}
			t.Errorf("%s: a %s read at %s, %s, answered a wrong value (%s)", k, readNames[rd.kind], rd.at.Format(time.RFC3339Nano), since, rd.problem)
		}
	}
	for i, at := range kills {
		r := &results[i]
		end := time.Now().Add(time.Hour)
		if i+1 < len(kills) {
			end = kills[i+1]
		}
		var latest time.Time // the last read before end
		var last time.Time
		after := map[string]int{} // what reads after the store was ready again answered
		for j, rd := range reads {
			if rd.at.Before(at) || !rd.at.Before(end) {
				continue
			}
			r.reads++
			latest = rd.at
			if rd.outcome != good && rd.at.After(readies[i]) {
				after[readNames[rd.kind]+": "+rd.problem]++
			}
			switch rd.outcome {
			case failed:
				r.failed[rd.kind]++
				last = rd.at
			case wrong:
				r.wrong[rd.kind]++
				if c, ok := why[j]; ok {
					r.why[rd.kind][c]++
				}
				// The plain rate reads low whenever the writers lag; a read
				// whose window Prometheus itself holds wrong is not the store's.
				if c, ok := why[j]; rd.kind != readRate && (!ok || c != causeScrape) {
					last = rd.at
				}
				if rd.low > 0 && (r.low == 0 || rd.low < r.low) {
					r.low = rd.low
				}
			}
		}
		if last.After(readies[i]) {
			r.recovery = last.Sub(readies[i])
		}
		for _, h := range lost {
			if h.kill(kills) == i {
				r.lost += h.missing
			}
		}
		if len(after) > 0 {
			t.Logf("%s kill %d: reads not good after the store was ready again: %v", k, i+1, after)
		}
		if bound := recoveryBound(retryAfter); r.recovery > bound {
			t.Errorf("%s kill %d: reads not good until %v after the store was ready again (bound %v)", k, i+1, r.recovery, bound)
		}
		if held := latest.Sub(readies[i].Add(r.recovery)); held < goodHold {
			t.Errorf("%s kill %d: reads good for %v after their recovery (%v after the store was ready again), want %v: the adapter did not recover",
				k, i+1, held.Round(time.Millisecond), r.recovery.Round(time.Millisecond), goodHold)
		}
	}
	if len(lat) == 0 {
		t.Fatalf("%s: no read before the first kill", k)
	}
	slices.Sort(lat)
	t.Logf("REPORT %s: %d reads (8 readers, 10/s each); before the kills latency p50 %v p99 %v, plain rate wrong %d times; outage %v, writers' Retry-After bound %v",
		k, len(reads), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), plainLow, outage, retryAfter)
	for i, r := range results {
		t.Logf("REPORT %s kill %d: %d reads; failed rate/fresh/complete/queue %d/%d/%d/%d, wrong %d/%d/%d/%d%s, of them fresh/complete late %d/%d, over lost samples %d/%d, as scraped %d/%d; samples lost %d (5 series); store ready %v after its start; reads good %v after ready; outage's samples in %v after ready",
			k, i+1, r.reads, r.failed[readRate], r.failed[readFreshRate], r.failed[readCompleteRate], r.failed[readQueue],
			r.wrong[readRate], r.wrong[readFreshRate], r.wrong[readCompleteRate], r.wrong[readQueue], lowest(r.low),
			r.why[readFreshRate][causeLate], r.why[readCompleteRate][causeLate], r.why[readFreshRate][causeLost], r.why[readCompleteRate][causeLost],
			r.why[readFreshRate][causeScrape], r.why[readCompleteRate][causeScrape],
			r.lost, r.startup.Round(time.Millisecond), r.recovery.Round(time.Millisecond), r.caughtUp.Round(time.Millisecond))
	}
}

// lowest says how low the lowest wrong rate read, if one did.
func lowest(low float64) string {
	if low == 0 {
		return ""
	}
	return fmt.Sprintf(" (lowest at %.0f%% of the true rate)", 100*low)
}
