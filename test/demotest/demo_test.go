package demotest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// demoFlags keep the run short: the signal comes at the first table row,
// long before the shortest traffic profile ends.
const demoFlags = "DEMO_FLAGS=--duration 1m --settle 0s"

// exitBound bounds the time from the signal to make's exit: the demo's
// teardown of a cluster with its pods (measured: see docs/real-node.md).
const exitBound = 60 * time.Second

// pipeBound bounds the wait, after make exited, for the end of its output:
// nothing of the run may hold the pipe once make is gone.
const pipeBound = 10 * time.Second

// startBound bounds the wait for the demo's first table row: the lock (held
// by another run for up to lockWait), the tools and images (cached by the
// time tests run), the cluster, the chart and the app.
const startBound = lockWait + 15*time.Minute

// TestDemoTearsDownOnSignal interrupts `make demo` once its cluster, pods
// and kube-proxy rules exist, as a user's Ctrl-C does (SIGINT to the whole
// foreground process group: make, the demo, the cluster's processes) and as
// a CI runner's timeout does (SIGTERM to make alone, which forwards it to
// the demo), and checks that make exits within exitBound, not successfully,
// having torn down: nothing of the run is left and the lock is free.
func TestDemoTearsDownOnSignal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("make demo runs a real node: run this test as root (make test-e2e)")
	}
	root := buildtools.MustRepoRoot(t)
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		group bool
	}{
		{"CtrlC", syscall.SIGINT, true},
		{"SIGTERMToMake", syscall.SIGTERM, false},
	} {
		t.Run(tc.name, func(t *testing.T) { interruptDemo(t, root, tc.sig, tc.group) })
	}
}

// interruptDemo runs make demo in root, signals it mid-run and checks the
// machine afterwards.
func interruptDemo(t *testing.T, root string, sig syscall.Signal, group bool) {
	var before machine
	withLock(t, nil, func() {
		if _, err := os.Stat(ownerFile); err == nil {
			t.Fatalf("%s exists with the lock free: a dead run's leftovers; run make clean-node first", ownerFile)
		}
		before = readMachine(t)
	})
	out := &output{row: make(chan struct{}), eof: make(chan struct{})}
	cmd := exec.Command("make", "--no-print-directory", "demo", demoFlags)
	cmd.Dir = root
	// Its own group, as a terminal's foreground job; if this test process dies
	// (a go test timeout, make test's stream killed), make gets SIGTERM — the
	// path TestDemoTearsDownOnSignal/SIGTERMToMake checks — instead of running on
	// outside every group its killer signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go out.read(r)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var done bool // make has exited and exited was read
	t.Cleanup(func() {
		if !done { // the test failed before: tear the run down as a Ctrl-C would
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-exited:
			case <-time.After(2 * exitBound):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}
		t.Logf("make demo's output, last lines:\n%s", out.tail(40))
	})

	select {
	case <-out.row:
	case err := <-exited:
		done = true
		t.Fatalf("make demo exited before its first table row: %v", err)
	case <-time.After(startBound):
		t.Fatalf("no table row after %v", startBound)
	}
	run := observeRun(t, cmd.Process.Pid, before)

	target := cmd.Process.Pid
	if group {
		target = -target
	}
	sent := time.Now()
	if err := syscall.Kill(target, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
		t.Logf("make exited %v after %v: %v", sig, time.Since(sent).Round(100*time.Millisecond), err)
	case <-time.After(exitBound):
		t.Errorf("make still runs %v after %v; killing its process group", exitBound, sig)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-exited
	}
	done = true
	// make's exit does not mean its last lines were read: the reader drains
	// the pipe until every writer (make, the demo) is gone.
	select {
	case <-out.eof:
	case <-time.After(pipeBound):
		t.Errorf("make's output still open %v after it exited: a process of the run outlived make", pipeBound)
	}
	checkExit(t, err, sig, out.text())
	var holder int
	withLock(t, func(pid int) { holder = pid }, func() {
		if run.procs[holder] {
			t.Errorf("the lock was still held by the run's process %d after make exited", holder)
		}
		if b, err := os.ReadFile(ownerFile); err == nil {
			t.Errorf("the run's owner record is left with the lock free:\n%s", b)
		}
		run.checkGone(t, before, readMachine(t))
	})
}

// checkExit: make did not succeed (the demo was cut short of its verdict)
// and the demo said it was interrupted and tore down.
func checkExit(t *testing.T, err error, sig syscall.Signal, text string) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Errorf("make demo after %v: %v, want a failed exit", sig, err)
	} else if ws := ee.Sys().(syscall.WaitStatus); !(ws.Signaled() && ws.Signal() == sig) && ws.ExitStatus() <= 0 {
		t.Errorf("make demo after %v: %v, want killed by %v or a non-zero exit", sig, err, sig)
	}
	for _, want := range []string{"demo: FAILED: interrupted", "demo: tearing down the cluster"} {
		if !strings.Contains(text, want) {
			t.Errorf("make demo's output lacks %q", want)
		}
	}
}

// output collects make's combined output; row is closed at the first row
// of the demo's table.
type output struct {
	mu    sync.Mutex
	lines []string
	row   chan struct{}
	once  sync.Once
	eof   chan struct{} // closed when the pipe's last writer is gone
}

// tableRow matches a row of the real-node demo's table (hack/demo's
// printRealRow: elapsed time, then the first column's bar).
var tableRow = regexp.MustCompile(`^\s*\d+:\d\d │`)

func (o *output) read(r *os.File) {
	defer close(o.eof)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		o.mu.Lock()
		o.lines = append(o.lines, sc.Text())
		o.mu.Unlock()
		if tableRow.MatchString(sc.Text()) {
			o.once.Do(func() { close(o.row) })
		}
	}
}

func (o *output) text() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines, "\n")
}

func (o *output) tail(n int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.lines[max(0, len(o.lines)-n):], "\n")
}

// The real-node lock and the record of the run holding it (test/cluster's
// node_lock.go): a flock of lockFile; ownerFile names the run's node root
// and work directory.
const (
	lockFile  = "/run/ebbflow-real-node/lock"
	ownerFile = "/run/ebbflow-real-node/owner"
	// lockWait bounds the wait for another run (a real-node test package,
	// another engineer's demo) to free the lock.
	lockWait = 30 * time.Minute
)

// tryLock takes the real-node lock without waiting; held is true when
// another process holds it.
func tryLock() (f *os.File, held bool, err error) {
	if err := os.MkdirAll("/run/ebbflow-real-node", 0o755); err != nil {
		return nil, false, err
	}
	f, err = os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("flock %s: %w", lockFile, err)
	}
	return f, false, nil
}

// lockHolder returns the PID /proc/locks names as holding the lock's
// flock, or 0.
func lockHolder() int {
	var st syscall.Stat_t
	if syscall.Stat(lockFile, &st) != nil {
		return 0
	}
	b, _ := os.ReadFile("/proc/locks")
	for line := range strings.Lines(string(b)) {
		// 1: FLOCK  ADVISORY  WRITE 6002 fe:00:10011091 0 EOF
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		dev := strings.Split(f[5], ":")
		if ino, err := strconv.ParseUint(dev[len(dev)-1], 10, 64); err == nil && ino == st.Ino {
			pid, _ := strconv.Atoi(f[4])
			return pid
		}
	}
	return 0
}

// withLock takes the real-node lock, waiting for other runs, calls fn while
// holding it, and frees it. held, when not nil, is told once if the lock
// was held at the first try and by whom (the PID /proc/locks names).
func withLock(t *testing.T, held func(pid int), fn func()) {
	t.Helper()
	deadline := time.Now().Add(lockWait)
	for first := true; ; first = false {
		f, busy, err := tryLock()
		if err != nil {
			t.Fatal(err)
		}
		if !busy {
			defer f.Close()
			fn()
			return
		}
		if first {
			pid := lockHolder()
			t.Logf("the real-node lock is held (by PID %d); waiting", pid)
			if held != nil {
				held(pid)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the real-node lock is still held after %v", lockWait)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
