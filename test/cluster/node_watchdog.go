package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// A run that ends without its teardown — killed, a panic, a go test
// timeout (whose alarm panics, so no deferred call or t.Cleanup runs) —
// would leave its real node on the machine until the next run. So each run
// starts a watchdog as soon as it holds the lock: its own binary again, in a
// process group of its own (a Ctrl-C of the terminal does not reach it),
// holding the lock through an inherited descriptor and the read end of a pipe
// whose write end only the run has. When the run stops its node it writes
// "stop" and the watchdog exits. When the pipe closes without it — the run
// is gone, however it died — the watchdog sweeps what the owner record names
// (the run's processes, the node, the kernel settings) and exits, and only
// then is the lock free.

// watchdogEnv makes a binary that links this package run as a watchdog
// instead of its main; the run sets it for the watchdog alone.
const watchdogEnv = "EBBFLOW_REAL_NODE_WATCHDOG"

const (
	watchdogStop    = "stop"
	watchdogLogFile = nodeStateDir + "/watchdog.log"
	watchdogTimeout = 2 * time.Minute // for its sweep
)

func init() {
	if os.Getenv(watchdogEnv) == "1" {
		os.Exit(runWatchdog())
	}
}

// watchdog is the run's handle on its watchdog process.
type watchdog struct {
	cmd  *exec.Cmd
	pipe *os.File // write end; closing it without "stop" makes it sweep
	done chan struct{}
}

// startWatchdog starts the watchdog of the run holding lock.
func startWatchdog(lock *nodeLock) (*watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer r.Close()
	logf, err := os.OpenFile(watchdogLogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), watchdogEnv+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf    // not the run's: go test waits for its output pipes to close
	cmd.ExtraFiles = []*os.File{lock.f, r} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	wd := &watchdog{cmd: cmd, pipe: w, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(wd.done) }()
	return wd, nil
}

// stop tells the watchdog the run has swept its node itself and waits for
// it to exit.
func (wd *watchdog) stop() {
	_, _ = io.WriteString(wd.pipe, watchdogStop)
	wd.pipe.Close()
	select {
	case <-wd.done:
	case <-time.After(30 * time.Second):
		_ = wd.cmd.Process.Kill()
		<-wd.done
	}
}

// kill ends the watchdog at once, as if it had been killed with the run.
func (wd *watchdog) kill() {
	_ = wd.cmd.Process.Kill()
	<-wd.done
	wd.pipe.Close()
}

// runWatchdog is the watchdog's main: fd 3 holds the lock, fd 4 is the pipe
// from the run.
func runWatchdog() int {
	_ = os.Unsetenv(watchdogEnv)
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	lock := os.NewFile(3, "real-node lock")
	msg, _ := io.ReadAll(os.NewFile(4, "run"))
	if strings.TrimSpace(string(msg)) == watchdogStop {
		return 0
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s watchdog: %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
	}
	o, ok := readNodeOwner()
	if !ok {
		logf("the run ended before it recorded anything: nothing to sweep")
		return 0
	}
	logf("the run ended without stopping its real node (%s); sweeping", o.root)
	ctx, cancel := context.WithTimeout(context.Background(), watchdogTimeout)
	defer cancel()
	if err := sweepDeadRun(ctx, o, logf); err != nil {
		logf("sweep incomplete, the owner record stays for the next run or make clean-node: %v", err)
		return 1
	}
	_ = os.Remove(nodeOwnerFile)
	logf("swept")
	runtime.KeepAlive(lock) // the lock is free once this process exits
	return 0
}

// sweepDeadRun removes what a run that died left: its processes (every one
// whose command line names its work directory: the control plane, the node,
// the shims), then the node (sweepNode), then its work directory if the run
// made it.
func sweepDeadRun(ctx context.Context, o nodeOwner, logf func(string, ...any)) error {
	if o.dir != "" {
		waitGone(killProcessesMentioning(o.dir), 10*time.Second)
	}
	if err := sweepNode(ctx, o, logf); err != nil {
		return err
	}
	if o.ownsDir && strings.HasPrefix(filepath.Base(o.dir), ownedDirPrefix) {
		if err := os.RemoveAll(o.dir); err != nil {
			return fmt.Errorf("remove %s: %w", o.dir, err)
		}
	}
	return nil
}

// waitGone waits until the processes have exited or timeout passed.
func waitGone(pids []int, timeout time.Duration) {
	_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(pids, alive), nil
	})
}

// alive reports whether pid is a process that has not exited (a zombie
// has).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// "pid (comm) S …": the state follows the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
