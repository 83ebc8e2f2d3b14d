package promtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/proc"
)

// errAddrInUse reports that Prometheus could not bind its listen address.
var errAddrInUse = errors.New("listen address already in use")

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

// launch starts Prometheus and waits until /-/ready answers 200, the process
// exits, or the ready timeout passes. It returns the process and the time it
// took to become ready. On any error the process is gone.
func (s *Server) launch(ctx context.Context) (*proc.Process, time.Duration, error) {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open log: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	start := time.Now()
	fmt.Fprintf(logf, "=== promtest: starting %s on %s at %s\n", s.bin, s.addr, start.Format(time.RFC3339Nano))

	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, 0, fmt.Errorf("start prometheus: %w", err)
	}

	if err := s.waitReady(ctx, p); err != nil {
		p.Kill()
		<-p.Done()
		return nil, 0, err
	}
	return p, time.Since(start), nil
}

// waitReady polls /-/ready until it answers 200 within the ready timeout.
func (s *Server) waitReady(ctx context.Context, p *proc.Process) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ReadyTimeout)
	defer cancel()
	// Another process may have taken the port; only our own Prometheus,
	// recognised by its TSDB path, counts as ready.
	err := proc.WaitFor(ctx, p, 20*time.Millisecond, func(ctx context.Context) (bool, error) { return s.ready(ctx) && s.ours(ctx), nil })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, proc.ErrExited):
		tail := s.LogTail(30)
		if strings.Contains(tail, "address already in use") {
			return fmt.Errorf("prometheus on %s: %w", s.addr, errAddrInUse)
		}
		return fmt.Errorf("prometheus exited before becoming ready (%v); log tail:\n%s", p.Err(), tail)
	}
	return fmt.Errorf("prometheus not ready after %v: %w; log tail:\n%s", s.opts.ReadyTimeout, err, s.LogTail(30))
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
func (s *Server) LogTail(n int) string {
	data, err := readTail(s.logPath, 64<<10)
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// readTail reads at most limit bytes from the end of path.
func readTail(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-limit, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

// listenAddr formats the listen address host:port.
func listenAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}
