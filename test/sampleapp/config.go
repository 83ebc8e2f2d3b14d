// Package sampleapp is the sample workload of the real-node tests and the
// demo: one small HTTP program (cmd/sampleapp, image ebbflow-sampleapp) with
// three modes.
//
//   - serve: GET / answers 200 after burning Config.CPUPerRequest of cpu time
//     and counts http_requests_total{code,method,handler}; the load the HPA
//     and the Autoscaler scale on.
//   - queue: an in-memory, bounded message queue (POST /enqueue?n=,
//     POST /dequeue) exporting queue_messages_ready; what a worker Autoscaler
//     scales on, down to zero.
//   - worker: polls a queue's /dequeue and burns Config.CPUPerMessage per
//     message, counting worker_messages_processed_total.
//
// Every mode serves /metrics, /healthz and /readyz on Config.ListenAddress;
// /readyz fails from the moment a shutdown begins, and the server keeps
// serving for Config.ShutdownDelay so that endpoints drain before it closes.
// The program writes no files (it runs with a read-only root filesystem) and
// needs no privileges.
package sampleapp

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"time"
)

// Mode is what the program does.
type Mode string

// The modes.
const (
	ModeServe  Mode = "serve"
	ModeQueue  Mode = "queue"
	ModeWorker Mode = "worker"
)

// Config is the program's configuration; its flags are added by AddFlags.
type Config struct {
	Mode Mode
	// ListenAddress serves the mode's endpoints and /metrics, /healthz,
	// /readyz (the worker serves only the latter three).
	ListenAddress string
	// ShutdownDelay is how long the server keeps serving, not ready, after
	// the shutdown signal, before it closes.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds the wait for requests in flight at close.
	ShutdownTimeout time.Duration

	// CPUPerRequest is the cpu time one GET / burns (serve).
	CPUPerRequest time.Duration

	// QueueSize is the most messages the queue holds (queue).
	QueueSize int

	// QueueURL is the queue's base URL, e.g. http://queue:8080 (worker).
	QueueURL string
	// CPUPerMessage is the cpu time one message costs (worker).
	CPUPerMessage time.Duration
	// PollInterval is the wait after an empty queue or a failed dequeue
	// (worker).
	PollInterval time.Duration
	// RequestTimeout bounds one dequeue request (worker).
	RequestTimeout time.Duration
}

// Default returns the defaults of the flags.
func Default() Config {
	return Config{
		Mode:            ModeServe,
		ListenAddress:   ":8080",
		ShutdownDelay:   5 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		CPUPerRequest:   10 * time.Millisecond,
		QueueSize:       100000,
		CPUPerMessage:   50 * time.Millisecond,
		PollInterval:    200 * time.Millisecond,
		RequestTimeout:  5 * time.Second,
	}
}

// AddFlags registers c's fields as flags on fs, with c's values as defaults.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	fs.Func("mode", "serve, queue or worker (default "+string(c.Mode)+")", func(s string) error {
		c.Mode = Mode(s)
		return nil
	})
	fs.StringVar(&c.ListenAddress, "listen-address", c.ListenAddress, "address of the HTTP server (/metrics, /healthz, /readyz and the mode's endpoints)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay", c.ShutdownDelay, "on SIGTERM, keep serving (with /readyz failing) this long before closing, so endpoints drain")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "at close, wait at most this long for requests in flight")
	fs.DurationVar(&c.CPUPerRequest, "cpu-per-request", c.CPUPerRequest, "serve: cpu time burnt per GET /")
	fs.IntVar(&c.QueueSize, "queue-size", c.QueueSize, "queue: most messages held; POST /enqueue answers 429 beyond")
	fs.StringVar(&c.QueueURL, "queue-url", c.QueueURL, "worker: base URL of the queue, e.g. http://queue:8080")
	fs.DurationVar(&c.CPUPerMessage, "cpu-per-message", c.CPUPerMessage, "worker: cpu time burnt per message")
	fs.DurationVar(&c.PollInterval, "poll-interval", c.PollInterval, "worker: wait after an empty queue or a failed dequeue")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "worker: timeout of one dequeue request")
}

// maxCPU bounds the cpu a request or message may ask for.
const maxCPU = time.Minute

// Validate returns every problem of c.
func (c *Config) Validate() []error {
	var errs []error
	if c.ListenAddress == "" {
		errs = append(errs, errors.New("--listen-address is empty"))
	}
	if c.ShutdownDelay < 0 || c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("--shutdown-delay must be >= 0 and --shutdown-timeout > 0"))
	}
	switch c.Mode {
	case ModeServe:
		if c.CPUPerRequest < 0 || c.CPUPerRequest > maxCPU {
			errs = append(errs, fmt.Errorf("--cpu-per-request must be within [0, %v]", maxCPU))
		}
	case ModeQueue:
		if c.QueueSize <= 0 {
			errs = append(errs, errors.New("--queue-size must be > 0"))
		}
	case ModeWorker:
		if u, err := url.Parse(c.QueueURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--queue-url %q is not an http(s) URL", c.QueueURL))
		}
		if c.CPUPerMessage < 0 || c.CPUPerMessage > maxCPU {
			errs = append(errs, fmt.Errorf("--cpu-per-message must be within [0, %v]", maxCPU))
		}
		if c.PollInterval <= 0 || c.RequestTimeout <= 0 {
			errs = append(errs, errors.New("--poll-interval and --request-timeout must be > 0"))
		}
	default:
		errs = append(errs, fmt.Errorf("--mode %q: want serve, queue or worker", c.Mode))
	}
	return errs
}
