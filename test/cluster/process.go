package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// Listening ports are chosen below the kernel's ephemeral range, so no
// outgoing connection can take one as its source port between choosing and
// binding, or while a component is restarted on the same port.
const (
	portRangeLow  = 20000
	portRangeHigh = 32767 // inclusive; Linux' ephemeral range starts at 32768 by default
)

// freePorts returns n distinct loopback ports that were free a moment ago,
// outside the ephemeral range when possible. All probe listeners are held
// until every port is chosen, so the ports differ from each other.
func freePorts(n int) ([]int, error) {
	high := portRangeHigh
	if low, ok := ephemeralLow(); ok {
		high = min(high, low-1)
	}
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for attempts := 0; len(ports) < n; attempts++ {
		addr := "127.0.0.1:0" // fallback: any port the kernel picks
		if high > portRangeLow && attempts < 200 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(portRangeLow+rand.IntN(high-portRangeLow+1)))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, fmt.Errorf("find free port: %w", err)
			}
			continue
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralLow returns the first port of Linux' ephemeral range.
func ephemeralLow() (int, bool) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, false
	}
	low, err := strconv.Atoi(fields[0])
	return low, err == nil
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
