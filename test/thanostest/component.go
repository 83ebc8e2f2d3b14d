package thanostest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/ebbflow/ebbflow/test/proc"
)

// Bounds of the components' life cycle.
const (
	stopGrace     = 10 * time.Second
	startAttempts = 5
	startTimeout  = 2 * time.Minute // each start until /-/ready
	pollInterval  = 200 * time.Millisecond
	maxStoresBody = 1 << 20
)

// loopback is an HTTP client that never goes through a proxy.
var loopback = &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}

// component is one running thanos process (sidecar or query).
type component struct {
	name     string
	logPath  string
	grpcAddr string
	httpAddr string
	proc     *proc.Process
}

// startComponent starts `thanos <args(grpc, http)>` in dir on two free
// loopback ports and waits until its /-/ready answers 200
// (proc.LaunchReady), its output appended to <dir>/<name>.log. A process
// that exits at once with its address taken (a port taken meanwhile) is
// retried on other ports.
func startComponent(ctx context.Context, bin, name, dir string, args func(grpc, http string) []string) (*component, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("thanos %s: %w", name, err)
	}
	var c *component
	err := proc.RetryAddrInUse(startAttempts, func() error {
		ports, err := proc.FreePorts(2)
		if err != nil {
			return err
		}
		try := &component{
			name:     name,
			logPath:  filepath.Join(dir, name+".log"),
			grpcAddr: net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[0])),
			httpAddr: net.JoinHostPort("127.0.0.1", fmt.Sprint(ports[1])),
		}
		spec := proc.Spec{Harness: "thanostest", Name: "thanos " + name, Bin: bin, Args: args(try.grpcAddr, try.httpAddr), Dir: dir, LogPath: try.logPath}
		try.proc, err = proc.LaunchReady(ctx, spec, pollInterval, startTimeout, func(ctx context.Context) bool {
			return proc.Probe(ctx, "http://"+try.httpAddr+"/-/ready")
		})
		if err == nil {
			c = try
		}
		return err
	})
	return c, err
}

// stop ends the process (SIGTERM, then SIGKILL after a grace period).
func (c *component) stop() { c.proc.Stop(stopGrace) }

// logTail returns the last n lines of the component's log.
func (c *component) logTail(n int) string { return proc.LogTail(c.logPath, n) }

// healthyStores counts the store endpoints Thanos Query lists without an
// error (GET /api/v1/stores).
func (c *component) healthyStores(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.httpAddr+"/api/v1/stores", nil)
	if err != nil {
		return 0, err
	}
	resp, err := loopback.Do(req)
	if err != nil {
		return 0, nil // not up yet
	}
	defer resp.Body.Close()
	var body struct {
		Data map[string][]struct {
			LastError *string `json:"lastError"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStoresBody)).Decode(&body); err != nil {
		return 0, fmt.Errorf("decode /api/v1/stores: %w", err)
	}
	n := 0
	for _, stores := range body.Data {
		for _, s := range stores {
			if s.LastError == nil || *s.LastError == "" {
				n++
			}
		}
	}
	return n, nil
}

// waitUntil polls cond until it reports true, fails, the component exits or
// ctx ends.
func waitUntil(ctx context.Context, what string, c *component, cond func(context.Context) (bool, error)) error {
	var condErr error
	err := proc.WaitFor(ctx, c.proc, pollInterval, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		condErr = err
		return ok, err
	})
	switch {
	case err == nil:
		return nil
	case condErr != nil:
		return fmt.Errorf("%s: %w", what, err)
	case errors.Is(err, proc.ErrExited):
		return fmt.Errorf("%s: thanos %s exited (%v); log tail:\n%s", what, c.name, c.proc.Err(), c.logTail(30))
	}
	return fmt.Errorf("%s: %w; log tail of thanos %s:\n%s", what, err, c.name, c.logTail(30))
}
