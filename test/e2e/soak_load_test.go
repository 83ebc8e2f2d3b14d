package e2e

// The soak's load: a fixed schedule of GETs through kube-apiserver, run by a
// bounded pool of workers, each result classified and timed.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Request kinds of the soak.
const (
	kindSingle   = "custom single pod"
	kindStar     = "custom * (1,000 pods)"
	kindSelector = "custom * with selector"
	kindExternal = "external"
	kindResource = "metrics.k8s.io pods"
	kindUnknown  = "unknown metric name"
)

// soakTick is the schedule's period; soakPattern is what each tick sends: 10
// requests per 50 ms = 200 requests/s, of which 20/s ask for unknown names.
const soakTick = 50 * time.Millisecond

var soakPattern = []string{kindSingle, kindStar, kindSelector, kindExternal, kindResource,
	kindSingle, kindStar, kindSelector, kindExternal, kindUnknown}

// soakWorkers bounds the requests in flight; a tick whose requests find
// every worker busy drops them (counted), so the rate never exceeds the
// schedule.
const soakWorkers = 48

// soakResult is one request's outcome.
type soakResult struct {
	kind    string
	at      time.Time
	latency time.Duration
	code    int // 0: transport error
	body    string
}

// soakLoad runs the schedule until stop and collects every result.
type soakLoad struct {
	client  *http.Client
	host    string
	paths   func(kind string) string
	mu      sync.Mutex
	results []soakResult
	dropped int
}

func newSoakLoad(cfg *rest.Config, paths func(string) string) (*soakLoad, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.Timeout = 30 * time.Second
	return &soakLoad{client: hc, host: strings.TrimSuffix(cfg.Host, "/"), paths: paths}, nil
}

// run sends the schedule until ctx ends, then waits for the requests in flight.
func (l *soakLoad) run(ctx context.Context) {
	jobs := make(chan string, soakWorkers)
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() {
			for kind := range jobs {
				l.do(kind)
			}
		})
	}
	t := time.NewTicker(soakTick)
	defer func() { t.Stop(); close(jobs); wg.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, kind := range soakPattern {
				select {
				case jobs <- kind:
				default:
					l.mu.Lock()
					l.dropped++
					l.mu.Unlock()
				}
			}
		}
	}
}

func (l *soakLoad) do(kind string) {
	start := time.Now()
	r := soakResult{kind: kind, at: start}
	resp, err := l.client.Get(l.host + l.paths(kind))
	if err != nil {
		r.body = err.Error()
	} else {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		r.code = resp.StatusCode
		if r.code != http.StatusOK {
			r.body = string(body)
		}
	}
	r.latency = time.Since(start)
	l.mu.Lock()
	l.results = append(l.results, r)
	l.mu.Unlock()
}

// randomName is an unknown metric name (valid syntax, never published).
func randomName() string {
	return fmt.Sprintf("soak_unknown_%08x", rand.Uint32())
}

// genericInternal is the message of the adapter's 500s, metrics.k8s.io's
// included: no PromQL, URL or Prometheus error text.
const genericInternal = "Internal error occurred: unable to fetch metrics"

// window is a time interval.
type window struct{ from, to time.Time }

func (w window) contains(t time.Time) bool { return !t.Before(w.from) && !t.After(w.to) }

// overlaps reports whether [from, to] meets the window: a request sent just
// before Prometheus stopped may fail when it reaches it.
func (w window) overlaps(from, to time.Time) bool { return !to.Before(w.from) && !from.After(w.to) }

// kindStats are the figures of one request kind.
type kindStats struct {
	n, ok, failed, outageErrors int
	p50, p99, max               time.Duration
}

// classify counts each kind's results: outside the outage every known kind
// must answer 200 and every unknown name 404; inside it a 500 with the
// generic message is expected too. Failures are listed (up to 10).
func classify(results []soakResult, outage window) (map[string]*kindStats, []string) {
	stats := map[string]*kindStats{}
	lat := map[string][]time.Duration{}
	var bad []string
	for _, r := range results {
		s := stats[r.kind]
		if s == nil {
			s = &kindStats{}
			stats[r.kind] = s
		}
		s.n++
		want := http.StatusOK
		if r.kind == kindUnknown {
			want = http.StatusNotFound
		}
		switch {
		case r.code == want:
			s.ok++
			lat[r.kind] = append(lat[r.kind], r.latency)
		case outage.overlaps(r.at, r.at.Add(r.latency)) && r.code == http.StatusInternalServerError && strings.Contains(r.body, genericInternal):
			s.outageErrors++
		default:
			s.failed++
			if len(bad) < 10 {
				bad = append(bad, fmt.Sprintf("%s at %s: %d %.200s", r.kind, r.at.Format("15:04:05.000"), r.code, r.body))
			}
		}
	}
	for k, ds := range lat {
		slices.Sort(ds)
		s := stats[k]
		s.p50, s.p99, s.max = quantileSorted(ds, 0.5), quantileSorted(ds, 0.99), ds[len(ds)-1]
	}
	return stats, bad
}

// quantileSorted is the nearest-rank q-quantile of sorted ds.
func quantileSorted(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
