package loadgen

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRamp(t *testing.T) {
	got := Ramp(0, 10, 10*time.Second, 5)
	want := []Step{{2 * time.Second, 0}, {2 * time.Second, 2.5}, {2 * time.Second, 5}, {2 * time.Second, 7.5}, {2 * time.Second, 10}}
	if len(got) != len(want) {
		t.Fatalf("Ramp = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d = %v, want %v", i, got[i], want[i])
		}
	}
	var total time.Duration
	for _, s := range Ramp(5, 1, 10*time.Second, 3) {
		total += s.Duration
	}
	if total != 10*time.Second {
		t.Errorf("uneven ramp lasts %v, want 10s", total)
	}
	if got := Ramp(3, 9, time.Second, 1); len(got) != 1 || got[0].RPS != 3 {
		t.Errorf("one-step ramp = %v, want [{1s 3}]", got)
	}
	if Ramp(1, 2, time.Second, 0) != nil || Ramp(1, 2, 0, 3) != nil {
		t.Error("Ramp without steps or time returned steps")
	}
}

func TestRunRefuses(t *testing.T) {
	ok := Config{URL: "http://127.0.0.1:1/", Profile: []Step{{time.Second, 1}}, MaxRequests: 1, MaxDuration: time.Second}
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"a name", func(c *Config) { c.URL = "http://example.com/" }, "names are not resolved"},
		{"a service name", func(c *Config) { c.URL = "http://web.default.svc:8080/" }, "names are not resolved"},
		{"scheme", func(c *Config) { c.URL = "ftp://127.0.0.1/" }, "scheme"},
		{"no request bound", func(c *Config) { c.MaxRequests = 0 }, "MaxRequests and MaxDuration"},
		{"no time bound", func(c *Config) { c.MaxDuration = 0 }, "MaxRequests and MaxDuration"},
		{"empty profile", func(c *Config) { c.Profile = nil }, "empty profile"},
		{"negative rate", func(c *Config) { c.Profile = []Step{{time.Second, -1}} }, "step 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.modify(&c)
			res, err := Run(context.Background(), c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
			if res.Sent != 0 {
				t.Errorf("refused run sent %d requests", res.Sent)
			}
		})
	}
}

// countingServer answers 200 after delay and counts requests, connections
// and the most requests in flight at once.
type countingServer struct {
	*httptest.Server
	requests, conns, inFlight, maxInFlight atomic.Int64
}

func newCountingServer(t *testing.T, delay time.Duration, code int) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		w.WriteHeader(code)
	}))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func TestRunRate(t *testing.T) {
	srv := newCountingServer(t, time.Millisecond, http.StatusOK)
	res, err := Run(context.Background(), Config{
		URL:     srv.URL + "/",
		Profile: []Step{{500 * time.Millisecond, 40}, {time.Second, 100}},
		// 20 planned + 100 planned. Enough workers that a loaded machine's
		// latency spikes (hundreds of ms under -race) drop nothing.
		Concurrency: 64,
		MaxRequests: 1000, MaxDuration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Sent+res.Dropped != 120 {
		t.Errorf("sent %d + dropped %d, want the 120 planned", res.Sent, res.Dropped)
	}
	if res.Dropped > 3 || res.OK != res.Sent || res.Errors != 0 || res.Truncated {
		t.Errorf("result %+v, want all of the 120 OK, none truncated", res)
	}
	if got := srv.requests.Load(); got != int64(res.Sent) {
		t.Errorf("server saw %d requests, Sent = %d", got, res.Sent)
	}
	l := res.Latency
	if l.P50 < time.Millisecond || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
		t.Errorf("latency %+v, want 1ms <= p50 <= p90 <= p99 <= max", l)
	}
	// Keep-alive: connections are reused (at most one per worker).
	if c := srv.conns.Load(); c > 64 || c >= int64(res.Sent) {
		t.Errorf("%d connections for %d requests with keep-alive", c, res.Sent)
	}
}

func TestRunOpenLoopDrops(t *testing.T) {
	srv := newCountingServer(t, 200*time.Millisecond, http.StatusOK)
	start := time.Now()
	res, err := Run(context.Background(), Config{
		URL: srv.URL, Profile: []Step{{time.Second, 50}}, Concurrency: 2,
		MaxRequests: 1000, MaxDuration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v in %v", res, time.Since(start))
	// 2 workers busy 200ms each: about 10 of the 50 are sent, the rest dropped
	// rather than queued, and the run does not stretch past the profile.
	if res.Sent+res.Dropped != 50 || res.Sent > 14 || res.Sent < 6 {
		t.Errorf("result %+v, want about 10 sent and the rest of 50 dropped", res)
	}
	if m := srv.maxInFlight.Load(); m > 2 {
		t.Errorf("%d requests in flight at once with Concurrency 2", m)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("run took %v for a 1s profile", el)
	}
}

func TestRunBounds(t *testing.T) {
	srv := newCountingServer(t, 0, http.StatusOK)
	res, err := Run(context.Background(), Config{
		URL: srv.URL, Profile: []Step{{10 * time.Second, 1000}}, MaxRequests: 25, MaxDuration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 25 || !res.Truncated || srv.requests.Load() != 25 {
		t.Errorf("MaxRequests 25: result %+v, server saw %d", res, srv.requests.Load())
	}

	start := time.Now()
	res, err = Run(context.Background(), Config{
		URL: srv.URL, Profile: []Step{{time.Minute, 20}}, MaxRequests: 1000, MaxDuration: 400 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second || !res.Truncated || res.Sent > 10 {
		t.Errorf("MaxDuration 400ms: took %v, result %+v", el, res)
	}

	// A slow answer is cut by MaxDuration too.
	slow := newCountingServer(t, time.Minute, http.StatusOK)
	start = time.Now()
	res, err = Run(context.Background(), Config{
		URL: slow.URL, Profile: []Step{{100 * time.Millisecond, 20}}, Timeout: time.Minute,
		MaxRequests: 1000, MaxDuration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second || res.Errors != res.Sent || res.OK != 0 {
		t.Errorf("slow server: took %v, result %+v", el, res)
	}
}

func TestRunErrors(t *testing.T) {
	failing := newCountingServer(t, 0, http.StatusInternalServerError)
	res, err := Run(context.Background(), Config{
		URL: failing.URL, Profile: []Step{{200 * time.Millisecond, 50}}, MaxRequests: 100, MaxDuration: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Errors != res.Sent || res.OK != 0 || res.Latency.Max != 0 {
		t.Errorf("500s: %+v, want all errors and no latency", res)
	}

	slow := newCountingServer(t, time.Second, http.StatusOK)
	res, err = Run(context.Background(), Config{
		URL: slow.URL, Profile: []Step{{100 * time.Millisecond, 30}}, Timeout: 50 * time.Millisecond,
		MaxRequests: 100, MaxDuration: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Errors != res.Sent {
		t.Errorf("timeouts: %+v, want all errors", res)
	}

	redirect := httptest.NewServer(http.RedirectHandler("http://example.com/", http.StatusFound))
	defer redirect.Close()
	res, err = Run(context.Background(), Config{
		URL: redirect.URL, Profile: []Step{{100 * time.Millisecond, 20}}, MaxRequests: 1, MaxDuration: 5 * time.Second,
	})
	if err != nil || res.Errors != 1 {
		t.Errorf("redirect: %+v %v, want one error, the redirect not followed", res, err)
	}
}

func TestRunDisableKeepAlives(t *testing.T) {
	srv := newCountingServer(t, 0, http.StatusOK)
	res, err := Run(context.Background(), Config{
		URL: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), Profile: []Step{{300 * time.Millisecond, 50}},
		DisableKeepAlives: true, MaxRequests: 100, MaxDuration: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK == 0 || srv.conns.Load() != int64(res.Sent) {
		t.Errorf("%d connections for %d requests (%+v), want one each", srv.conns.Load(), res.Sent, res)
	}
}

func TestRunCanceled(t *testing.T) {
	srv := newCountingServer(t, 0, http.StatusOK)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{URL: srv.URL, Profile: []Step{{time.Minute, 10}}, MaxRequests: 1000, MaxDuration: time.Minute})
	if err != context.DeadlineExceeded || res.Sent == 0 {
		t.Errorf("Run = %+v, %v; want some requests and the context's error", res, err)
	}
}

func TestHistogram(t *testing.T) {
	h := newHistogram()
	for i := 1; i <= 10000; i++ {
		h.observe(time.Duration(i) * 100 * time.Microsecond) // 0.1ms .. 1s, uniform
	}
	for q, exact := range map[float64]time.Duration{0.5: 500 * time.Millisecond, 0.9: 900 * time.Millisecond, 0.99: 990 * time.Millisecond} {
		got := h.quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.011 {
			t.Errorf("q%.2f = %v, want %v within 1%%", q, got, exact)
		}
	}
	if h.max != time.Second || h.quantile(1) != time.Second {
		t.Errorf("max = %v, q1 = %v, want 1s", h.max, h.quantile(1))
	}
	other := newHistogram()
	other.observe(2 * time.Hour)
	other.observe(0)
	h.merge(other)
	if h.n != 10002 || h.max != 2*time.Hour || len(h.counts) != histogramBuckets {
		t.Errorf("after merge n=%d max=%v buckets=%d", h.n, h.max, len(h.counts))
	}
	if newHistogram().latency() != (Latency{}) {
		t.Error("empty histogram has latencies")
	}
}
