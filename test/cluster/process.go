package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/ebbflow/ebbflow/test/proc"
)

// stopGrace is how long a process may take to exit after SIGTERM before its
// process group is killed.
const stopGrace = 10 * time.Second

// process is one child process in its own process group, with stdout and
// stderr appended to a log file.
type process struct {
	*proc.Process
	name    string
	logPath string
}

// startProcess launches bin with args in dir, appending its output to logPath.
// The child gets its own process group and, on Linux, SIGKILL when the parent
// dies without cleaning up.
func startProcess(name, dir, logPath, bin string, args []string, env []string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "=== cluster: starting %s at %s\n%s %q\n", name, time.Now().Format(time.RFC3339Nano), bin, args)

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), env...)
	p, err := proc.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &process{Process: p, name: name, logPath: logPath}, nil
}

// exitError describes an early exit, with the tail of the log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%v); log tail:\n%s", p.name, p.Err(), logTail(p.logPath, 30))
}

// logTail returns up to the last n lines of the file at path; it never fails.
func logTail(path string, n int) string {
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
	off := max(st.Size()-limit, 0)
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
