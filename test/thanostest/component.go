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
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/proc"
)

// Bounds of the components' life cycle.
const (
	stopGrace     = 10 * time.Second
	startAttempts = 5
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
// loopback ports and waits until its /-/ready answers 200. A process that
// exits at once (a port taken meanwhile) is retried on other ports.
func startComponent(ctx context.Context, bin, name, dir string, args func(grpc, http string) []string) (*component, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("thanos %s: %w", name, err)
	}
	var lastErr error
	for range startAttempts {
		c, err := launch(bin, name, dir, args)
		if err != nil {
			return nil, err
		}
		err = waitUntil(ctx, "thanos "+name+" /-/ready", c, func(ctx context.Context) (bool, error) {
			return proc.Probe(ctx, "http://"+c.httpAddr+"/-/ready"), nil
		})
		if err == nil {
			return c, nil
		}
		c.stop()
		lastErr = err
		if !strings.Contains(c.logTail(20), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

// launch picks the ports and starts the process, its output appended to
// <dir>/<name>.log.
func launch(bin, name, dir string, args func(grpc, http string) []string) (*component, error) {
	grpcPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := proc.FreePort()
	if err != nil {
		return nil, err
	}
	c := &component{
		name:     name,
		logPath:  filepath.Join(dir, name+".log"),
		grpcAddr: net.JoinHostPort("127.0.0.1", fmt.Sprint(grpcPort)),
		httpAddr: net.JoinHostPort("127.0.0.1", fmt.Sprint(httpPort)),
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("thanos %s log: %w", name, err)
	}
	defer logf.Close() // the child holds its own descriptor
	argv := args(c.grpcAddr, c.httpAddr)
	fmt.Fprintf(logf, "=== thanostest: starting %s %q at %s\n", bin, argv, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(bin, argv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if c.proc, err = proc.Start(cmd); err != nil {
		return nil, fmt.Errorf("start thanos %s: %w", name, err)
	}
	return c, nil
}

// stop ends the process (SIGTERM, then SIGKILL after a grace period).
func (c *component) stop() { c.proc.Stop(stopGrace) }

// logTail returns the last n lines of the component's log.
func (c *component) logTail(n int) string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

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
