package promtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/proc"
)

// errAddrInUse reports that Prometheus could not bind its listen address.
var errAddrInUse = proc.ErrAddrInUse

// findBinary returns the prometheus binary to run: explicit, then with
// prometheus3 the one hack/build-tools.sh builds, else PATH, then
// /usr/bin/prometheus.
func findBinary(ctx context.Context, explicit string, prometheus3 bool) (string, error) {
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("prometheus binary: %w", err)
		}
		return explicit, nil
	}
	if prometheus3 {
		return buildtools.Path(ctx, os.Stderr, "prometheus3")
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	if st, err := os.Stat("/usr/bin/prometheus"); err == nil && !st.IsDir() {
		return "/usr/bin/prometheus", nil
	}
	return "", ErrNotInstalled
}

// args returns the Prometheus command line for the server's files and port.
func (s *Server) args() []string {
	args := []string{
		"--config.file=" + s.files.config,
		"--storage.tsdb.path=" + s.dataDir,
		"--web.listen-address=" + s.addr,
		"--web.enable-lifecycle",
		"--web.enable-admin-api",
		// Tests run for minutes; a short retention keeps compaction trivial.
		"--storage.tsdb.retention.time=" + promDuration(s.opts.Retention),
		"--query.lookback-delta=" + promDuration(s.opts.LookbackDelta),
		"--log.level=info",
	}
	return append(args, s.opts.ExtraArgs...)
}

// launch starts Prometheus and waits until /-/ready answers 200 from it
// (proc.LaunchReady), the process exits, or the ready timeout passes. It
// returns the process and the time it took to become ready. On any error the
// process is gone.
func (s *Server) launch(ctx context.Context) (*proc.Process, time.Duration, error) {
	start := time.Now()
	// Another process may have taken the port; only our own Prometheus,
	// recognised by its TSDB path, counts as ready.
	p, err := proc.LaunchReady(ctx, proc.Spec{Harness: "promtest", Name: "prometheus on " + s.addr, Bin: s.bin, Args: s.args(), Dir: s.dir, LogPath: s.logPath},
		20*time.Millisecond, s.opts.ReadyTimeout, func(ctx context.Context) bool { return s.ready(ctx) && s.ours(ctx) })
	if err != nil {
		return nil, 0, err
	}
	return p, time.Since(start), nil
}

// ready reports whether /-/ready answers 200.
func (s *Server) ready(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/-/ready", nil)
	if err != nil {
		return false
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// ours reports whether the Prometheus answering on s.addr uses this
// server's TSDB directory.
func (s *Server) ours(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	flags, err := s.api.Flags(ctx)
	return err == nil && flags["storage.tsdb.path"] == s.dataDir
}

// LogTail returns up to the last n lines of the Prometheus log (all runs of
// this server, separated by "=== promtest:" markers). It never fails; an
// unreadable log yields a note instead.
func (s *Server) LogTail(n int) string { return proc.LogTail(s.logPath, n) }

// listenAddr formats the listen address host:port.
func listenAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
