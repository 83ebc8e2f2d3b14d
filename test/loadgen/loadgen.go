// Package loadgen sends HTTP GET requests at a planned rate, open loop, for
// the real-node tests and the demo: the rate of each moment is the profile's,
// whatever the server's latency, as users' traffic is. A request that is due
// while Config.Concurrency requests are in flight is dropped and counted,
// never queued, so memory and the number of connections stay bounded by
// Config.Concurrency. Latencies go to a fixed-size histogram.
//
// Requests go only to an IP literal or localhost (no name is resolved, no
// proxy from the environment is used, redirects are not followed), and every
// run is bounded by Config.MaxRequests and Config.MaxDuration.
package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Step is a stretch of constant rate.
type Step struct {
	Duration time.Duration
	// RPS is the requests per second sent during the step; 0 is a pause.
	RPS float64
}

// Ramp returns steps equal steps from rate from to rate to over the given
// time: the first step at from, the last at to, evenly spaced between.
func Ramp(from, to float64, over time.Duration, steps int) []Step {
	if steps <= 0 || over <= 0 {
		return nil
	}
	out := make([]Step, steps)
	for i := range out {
		rps := from
		if steps > 1 {
			rps = from + (to-from)*float64(i)/float64(steps-1)
		}
		start, end := over*time.Duration(i)/time.Duration(steps), over*time.Duration(i+1)/time.Duration(steps)
		out[i] = Step{Duration: end - start, RPS: rps}
	}
	return out
}

// Config is one run.
type Config struct {
	// URL is requested with GET. Its host must be an IP literal or
	// localhost (taken as 127.0.0.1); scheme http or https.
	URL string
	// Profile is run from its first step to its last.
	Profile []Step
	// Concurrency is the number of requests in flight at most; default 16.
	Concurrency int
	// DisableKeepAlives opens a connection per request, so that kube-proxy
	// spreads requests to a Service over all its endpoints.
	DisableKeepAlives bool
	// Timeout bounds each request; default 5s.
	Timeout time.Duration
	// MaxRequests is the most requests sent; required (> 0).
	MaxRequests int
	// MaxDuration is the longest the run lasts, requests in flight
	// included; required (> 0).
	MaxDuration time.Duration
}

// Latency summarizes the latencies of the OK requests, each within 1%.
type Latency struct {
	P50, P90, P99, Max time.Duration
}

// Result counts a run's requests. Sent = OK + Errors.
type Result struct {
	// Sent requests were started; Dropped ones were due while all workers
	// were busy (or the run ended) and not sent.
	Sent, OK, Errors, Dropped int
	// Truncated is true when MaxRequests or MaxDuration ended the run
	// before the profile.
	Truncated bool
	// Latency is that of the OK (2xx) requests.
	Latency Latency
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = 16
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c
}

// validate checks c and returns its parsed URL.
func (c Config) validate() (*url.URL, error) {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("url: %w", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url %q: scheme must be http or https", c.URL))
	default:
		if err := checkHost(u.Hostname()); err != nil {
			errs = append(errs, fmt.Errorf("url %q: %w", c.URL, err))
		}
	}
	if c.MaxRequests <= 0 || c.MaxDuration <= 0 {
		errs = append(errs, errors.New("MaxRequests and MaxDuration must be > 0"))
	}
	if len(c.Profile) == 0 {
		errs = append(errs, errors.New("empty profile"))
	}
	for i, s := range c.Profile {
		if s.Duration <= 0 || s.RPS < 0 {
			errs = append(errs, fmt.Errorf("profile step %d: duration must be > 0 and rps >= 0", i))
		}
	}
	return u, errors.Join(errs...)
}

// checkHost accepts an IP literal or localhost, nothing that needs a resolver.
func checkHost(host string) error {
	if host == "localhost" || net.ParseIP(host) != nil {
		return nil
	}
	return fmt.Errorf("host %q is neither an IP address nor localhost (names are not resolved)", host)
}

// dialIP dials only IP literals; localhost is 127.0.0.1.
func dialIP(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		if net.ParseIP(host) == nil {
			return nil, fmt.Errorf("loadgen dials IP addresses only, not %q", host)
		}
		return d.DialContext(ctx, network, net.JoinHostPort(host, port))
	}
}

// Run sends the profile's requests and returns their counts once the
// profile is done and the requests in flight are answered, or a bound is
// reached. If ctx ends first it returns what was counted and ctx.Err().
// Invalid configurations are refused before anything is sent.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	u, err := cfg.validate()
	if err != nil {
		return Result{}, fmt.Errorf("loadgen: %w", err)
	}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         dialIP(&net.Dialer{Timeout: cfg.Timeout}),
		DisableKeepAlives:   cfg.DisableKeepAlives,
		MaxIdleConnsPerHost: cfg.Concurrency,
		MaxConnsPerHost:     cfg.Concurrency,
		TLSHandshakeTimeout: cfg.Timeout,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport:     transport,
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.MaxDuration)
	defer cancel()
	// A job is handed out only while fewer than Concurrency are in flight,
	// so the buffer never holds more than Concurrency: nothing queues.
	jobs := make(chan struct{}, cfg.Concurrency)
	var inFlight atomic.Int64
	results := make([]workerResult, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range results {
		results[i].hist = newHistogram()
		wg.Go(func() { results[i].work(runCtx, client, u.String(), jobs, &inFlight) })
	}
	sent, dropped, truncated := schedule(runCtx, cfg, jobs, &inFlight)
	close(jobs)
	wg.Wait()

	res := Result{Sent: sent, Dropped: dropped, Truncated: truncated}
	hist := newHistogram()
	for i := range results {
		res.OK += results[i].ok
		res.Errors += results[i].errors
		hist.merge(results[i].hist)
	}
	res.Latency = hist.latency()
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	if runCtx.Err() != nil { // MaxDuration
		res.Truncated = true
	}
	return res, nil
}

// workerResult is one worker's tally, merged after the run.
type workerResult struct {
	ok, errors int
	hist       *histogram
}

// work sends one request per job until jobs is closed, and counts each
// finished job out of inFlight.
func (w *workerResult) work(ctx context.Context, client *http.Client, target string, jobs <-chan struct{}, inFlight *atomic.Int64) {
	for range jobs {
		start := time.Now()
		if get(ctx, client, target) {
			w.ok++
			w.hist.observe(time.Since(start))
		} else {
			w.errors++
		}
		inFlight.Add(-1)
	}
}

// get requests target and reports whether it answered 2xx; the body is read
// (up to 1 MiB) so the connection can be reused.
func get(ctx context.Context, client *http.Client, target string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, cerr := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return cerr == nil && resp.StatusCode >= 200 && resp.StatusCode < 300
}

// schedule hands out a job at each planned moment of the profile, or drops
// it when Concurrency jobs are in flight, until the profile ends,
// MaxRequests are sent, or ctx is done. Moments missed by a late wake-up are
// issued at once (each still sent or dropped), so the count follows the
// plan. It is the only one to add to inFlight.
func schedule(ctx context.Context, cfg Config, jobs chan<- struct{}, inFlight *atomic.Int64) (sent, dropped int, truncated bool) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	stepStart := time.Now()
	for _, step := range cfg.Profile {
		stepEnd := stepStart.Add(step.Duration)
		for k := 0; ; k++ {
			var at time.Time
			if step.RPS > 0 {
				at = stepStart.Add(time.Duration(float64(k) / step.RPS * float64(time.Second)))
			}
			if step.RPS == 0 || !at.Before(stepEnd) {
				at = stepEnd
			}
			if wait := time.Until(at); wait > 0 {
				timer.Reset(wait)
				select {
				case <-ctx.Done():
					return sent, dropped, true
				case <-timer.C:
				}
			} else if ctx.Err() != nil {
				return sent, dropped, true
			}
			if at.Equal(stepEnd) {
				break
			}
			if inFlight.Load() >= int64(cfg.Concurrency) {
				dropped++
				continue
			}
			inFlight.Add(1)
			jobs <- struct{}{} // room: at most Concurrency jobs are out
			sent++
			if sent >= cfg.MaxRequests {
				return sent, dropped, true
			}
		}
		stepStart = stepEnd
	}
	return sent, dropped, false
}
