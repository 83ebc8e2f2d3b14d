package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ErrAddrInUse is what LaunchReady's error wraps when the child exited
// saying its listen address was taken (another process got the free port
// meanwhile): the caller picks other ports and launches again.
var ErrAddrInUse = errors.New("listen address already in use")

// Spec is one child process of a harness.
type Spec struct {
	Harness string   // who launches it, in the log's header line: "cluster", "promtest"
	Name    string   // the child's name in errors
	Bin     string   // the executable
	Args    []string // its arguments
	Dir     string   // its working directory
	Env     []string // added to the test's environment
	LogPath string   // stdout and stderr are appended here
}

// Launch starts the child (Start: its own process group, killed with the
// test binary on Linux), its output appended to s.LogPath after a header
// line "=== <harness>: starting <bin> <args> at <time>", which separates
// the runs of a child started again in one log.
func Launch(s Spec) (*Process, error) {
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", s.Name, err)
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "=== %s: starting %s %q at %s\n", s.Harness, s.Bin, s.Args, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.Bin, s.Args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), s.Env...)
	p, err := Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	return p, nil
}

// LaunchReady launches the child and polls ready every interval until it
// reports true, bounded by timeout. When the child exits first, the error
// holds the tail of this run's log and wraps ErrAddrInUse if that says its
// address was taken; on any error the child is gone.
func LaunchReady(ctx context.Context, s Spec, interval, timeout time.Duration, ready func(context.Context) bool) (*Process, error) {
	var from int64 // where this run's log begins
	if st, err := os.Stat(s.LogPath); err == nil {
		from = st.Size()
	}
	p, err := Launch(s)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = WaitFor(wctx, p, interval, func(ctx context.Context) (bool, error) { return ready(ctx), nil })
	if err == nil {
		return p, nil
	}
	p.Kill()
	<-p.Done()
	tail := logTail(s.LogPath, from, 30)
	if errors.Is(err, ErrExited) {
		if strings.Contains(tail, "address already in use") {
			return nil, fmt.Errorf("%s: %w (%v); log tail:\n%s", s.Name, ErrAddrInUse, p.Err(), tail)
		}
		return nil, fmt.Errorf("%s exited before it was ready (%v); log tail:\n%s", s.Name, p.Err(), tail)
	}
	return nil, fmt.Errorf("%s not ready after %v: %w; log tail:\n%s", s.Name, timeout, err, tail)
}

// RetryAddrInUse calls launch up to attempts times while it fails with
// ErrAddrInUse (launch picks its ports anew each time) and returns its last
// error.
func RetryAddrInUse(attempts int, launch func() error) error {
	var err error
	for range attempts {
		if err = launch(); !errors.Is(err, ErrAddrInUse) {
			return err
		}
	}
	return err
}

// LogTail returns up to the last n lines of the file at path, read from its
// last 128 KiB. It never fails: an unreadable log yields a note instead.
func LogTail(path string, n int) string { return logTail(path, 0, n) }

// logTail is LogTail of the part of the file from offset from on.
func logTail(path string, from int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(log unavailable: " + err.Error() + ")"
	}
	const limit = 128 << 10
	off := max(st.Size()-limit, min(from, st.Size()), 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "(log unavailable: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
