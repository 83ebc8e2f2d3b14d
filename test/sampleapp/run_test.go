package sampleapp

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"defaults", func(*Config) {}, ""},
		{"unknown mode", func(c *Config) { c.Mode = "cron" }, `--mode "cron"`},
		{"negative cpu", func(c *Config) { c.CPUPerRequest = -1 }, "--cpu-per-request"},
		{"queue size", func(c *Config) { c.Mode = ModeQueue; c.QueueSize = 0 }, "--queue-size"},
		{"worker without url", func(c *Config) { c.Mode = ModeWorker }, "--queue-url"},
		{"worker with a bad url", func(c *Config) { c.Mode = ModeWorker; c.QueueURL = "queue:8080" }, "--queue-url"},
		{"worker", func(c *Config) { c.Mode = ModeWorker; c.QueueURL = "http://queue.default.svc:8080" }, ""},
		{"no listen address", func(c *Config) { c.ListenAddress = "" }, "--listen-address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.modify(&c)
			errs := c.Validate()
			if tt.want == "" {
				if len(errs) != 0 {
					t.Fatalf("Validate() = %v", errs)
				}
				return
			}
			if len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error about %s", errs, tt.want)
			}
		})
	}
}

// startRun runs cfg on a loopback listener and returns its base URL and the
// channel Run's error arrives on.
func startRun(t *testing.T, ctx context.Context, cfg Config) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- RunListener(ctx, cfg, ln, discardLogger()) }()
	return "http://" + ln.Addr().String(), done
}

// TestGracefulShutdown: after the signal, /readyz fails at once while / is
// still answered for the shutdown delay; then the server closes and Run
// returns nil.
func TestGracefulShutdown(t *testing.T) {
	cfg := Default()
	cfg.CPUPerRequest = time.Millisecond
	cfg.ShutdownDelay = 700 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, done := startRun(t, ctx, cfg)

	for _, p := range []string{"/", "/healthz", "/readyz"} {
		if code, body := get(t, url+p); code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", p, code, body)
		}
	}
	if code, body := get(t, url+"/metrics"); code != http.StatusOK || !strings.Contains(body, `http_requests_total{code="200",handler="/",method="get"} 1`) {
		t.Fatalf("GET /metrics = %d:\n%s", code, body)
	}

	canceled := time.Now()
	cancel()
	waitFor(t, 2*time.Second, "/readyz failing", func() bool {
		code, _ := get(t, url+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	if code, _ := get(t, url+"/"); code != http.StatusOK {
		t.Errorf("GET / during the shutdown delay = %d, want 200", code)
	}
	if code, _ := get(t, url+"/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz during the shutdown delay = %d, want 200", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(canceled); el < cfg.ShutdownDelay {
			t.Errorf("Run returned %v after the signal, before the %v delay", el, cfg.ShutdownDelay)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if code, _ := get(t, url+"/healthz"); code != 0 {
		t.Errorf("server still answers after Run returned (%d)", code)
	}
}

// TestRunQueueAndWorker runs the queue and a worker as the program does and
// checks the worker's metrics on its own server.
func TestRunQueueAndWorker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	qcfg := Default()
	qcfg.Mode, qcfg.ShutdownDelay = ModeQueue, 0
	qurl, qdone := startRun(t, ctx, qcfg)

	wcfg := workerConfig(qurl)
	wcfg.ShutdownDelay = 0
	wurl, wdone := startRun(t, ctx, wcfg)

	resp, err := http.Post(qurl+"/enqueue?n=7", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, 10*time.Second, "7 messages processed", func() bool {
		_, body := get(t, wurl+"/metrics")
		return strings.Contains(body, "worker_messages_processed_total 7\n")
	})
	if _, body := get(t, qurl+"/metrics"); !strings.Contains(body, "queue_messages_ready 0\n") ||
		!strings.Contains(body, "queue_messages_dequeued_total 7\n") {
		t.Errorf("queue metrics:\n%s", body)
	}
	cancel()
	for _, done := range []<-chan error{qdone, wdone} {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
	}
}
