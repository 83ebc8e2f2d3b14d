package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// dyingRunEnv makes the test binary a run that starts a real node with a
// pod and then dies as a go test timeout ends a test binary (dyingRun).
const dyingRunEnv = "EBBFLOW_TEST_DYING_RUN"

func TestMain(m *testing.M) {
	if os.Getenv(dyingRunEnv) == "1" {
		dyingRun()
	}
	os.Exit(m.Run())
}

// TestRealNodeWatchdogSweepsADeadRun runs a real node with a running pod in
// a child process that then dies without its teardown, as a go test timeout
// ends a test binary (testing's alarm panics: no deferred call, no
// t.Cleanup, no Stop). Its watchdog must sweep at once — before the lock is
// free — so that when this test gets the lock nothing of the dead run is
// left: processes, mounts, cgroups, chains, bridge, owner record, work
// directory, and every kernel setting has its value of before.
func TestRealNodeWatchdogSweepsADeadRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeLockWait+6*time.Minute) // the run waits for the lock, then starts
	defer cancel()
	kernelBefore := idleSysctls(t)
	r := startDyingRun(ctx, t)
	err := r.cmd.Wait()
	died := time.Now()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(r.stderr.String(), "panic: test timed out") {
		t.Fatalf("the run should have died of the timeout's panic (exit 2), got %v:\n%s", err, tail(r.stderr.String(), 30))
	}

	// The watchdog holds the lock until it has swept.
	holdNodeLock(t)
	t.Logf("lock free %v after the run died", time.Since(died).Round(10*time.Millisecond))
	if log, _ := os.ReadFile(watchdogLogFile); !strings.Contains(string(log), "watchdog: swept") {
		t.Errorf("the watchdog did not sweep; its log:\n%s", log)
	}
	assertDeadRunGone(t, r, kernelBefore)
}

// TestRealNodeCleanNodeSweepsAKilledRun: a run killed with SIGKILL together
// with its watchdog leaves its node on the machine (the owner record says
// so); make clean-node (SweepRealNode) refuses while the run lives and,
// once it is dead, its sweep removes all of it. The test holds the lock
// from the kill to its checks: a dead run's node is visible to no other run.
func TestRealNodeCleanNodeSweepsAKilledRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeLockWait+6*time.Minute) // the run waits for the lock, then starts
	defer cancel()
	kernelBefore := idleSysctls(t)
	r := startDyingRun(ctx, t)
	wds := watchdogProcesses() // the run holds the lock: the only watchdog is its
	if len(wds) != 1 {
		t.Fatalf("want the run's one watchdog, found %v", wds)
	}
	var out strings.Builder
	if err := SweepRealNode(ctx, &out); !errors.Is(err, errNodeLockHeld) {
		t.Errorf("clean-node while the run lives: %v, want it to refuse (%v)", err, errNodeLockHeld)
	}
	// Queued for the lock before the kill: the dead run's node is this test's
	// to sweep, never seen by another run polling for the lock meanwhile (it
	// would sweep it itself, or, a test, find a dead run's leftovers).
	takeLock := queueForNodeLock(ctx, t)
	_ = syscall.Kill(atoi(wds[0]), syscall.SIGKILL)
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	defer takeLock().unlock()
	if o, ok := readNodeOwner(); !ok || o.root != r.root {
		t.Fatalf("a run killed with its watchdog should have left its owner record, found %+v", o)
	}
	err := sweepRecordedRun(ctx, cleanNodeLog(&out))
	t.Logf("clean-node:\n%s", out.String())
	if err != nil {
		t.Fatalf("clean-node: %v", err)
	}
	assertDeadRunGone(t, r, kernelBefore)
}

// queueForNodeLock waits for the real-node lock, held by another process, in
// a blocking flock and returns once the kernel has queued the wait: the
// lock is the test's as soon as its holders are gone. take returns it,
// failing the test if the wait ends without it (ctx done).
func queueForNodeLock(ctx context.Context, t *testing.T) (take func() *nodeLock) {
	t.Helper()
	type result struct {
		l   *nodeLock
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := waitNodeLockBlocking(ctx, t.Logf)
		got <- result{l, err}
	}()
	var r *result
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		select {
		case res := <-got: // free already, or the wait failed
			r = &res
			return true, res.err
		default:
			return flockWaiter(os.Getpid()), nil
		}
	})
	if err != nil {
		t.Fatalf("queue for the real-node lock: %v", err)
	}
	return func() *nodeLock {
		t.Helper()
		if r == nil {
			res := <-got // waitNodeLockBlocking ends by ctx at the latest
			r = &res
		}
		if r.err != nil {
			t.Fatalf("wait for the real-node lock: %v", r.err)
		}
		return r.l
	}
}

// flockWaiter says whether /proc/locks lists a flock that process pid is
// blocked on ("N: -> FLOCK ADVISORY WRITE <pid> ...").
func flockWaiter(pid int) bool {
	b, _ := os.ReadFile("/proc/locks")
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "->" && f[2] == "FLOCK" && f[5] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// idleSysctls reads the machine's kernel settings while no run is on it.
func idleSysctls(t *testing.T) map[string]string {
	t.Helper()
	lock := holdNodeLock(t)
	defer lock.unlock() // now: the run under test needs it
	return sysctlSnapshot(t)
}

// dyingRunProcess is a child test binary running dyingRun.
type dyingRunProcess struct {
	cmd       *exec.Cmd
	stderr    *strings.Builder
	root, dir string
}

// startDyingRun starts dyingRun in a child and returns once its pod runs,
// after checking that it changed the machine.
func startDyingRun(ctx context.Context, t *testing.T) dyingRunProcess {
	t.Helper()
	r := dyingRunProcess{cmd: exec.CommandContext(ctx, os.Args[0]), stderr: &strings.Builder{}}
	r.cmd.Env = append(os.Environ(), dyingRunEnv+"=1")
	r.cmd.Stderr = r.stderr
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "READY root=%s dir=%s", &r.root, &r.dir); err == nil {
			break
		}
	}
	if r.root == "" {
		_ = r.cmd.Wait()
		t.Fatalf("the dying run never got its pod running:\n%s", tail(r.stderr.String(), 40))
	}
	if o, ok := readNodeOwner(); !ok || o.root != r.root {
		t.Errorf("owner record while the run lives: %+v, want root %s", o, r.root)
	}
	during, _ := readKernelSettings()
	t.Logf("run up (%s); kernel settings during it: %v", r.root, during)
	return r
}

// assertDeadRunGone checks, under the lock, that nothing of the dead run is
// left and the kernel settings are those of before.
func assertDeadRunGone(t *testing.T, r dyingRunProcess, kernelBefore map[string]string) {
	t.Helper()
	assertNodeLeftNothing(t, r.root)
	if pids := processesMentioning(r.dir); len(pids) > 0 {
		t.Errorf("processes of the dead run left: %v", pids)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("the dead run's work directory %s is left (%v)", r.dir, err)
	}
	assertSysctlsUnchanged(t, kernelBefore, sysctlSnapshot(t))
}

// dyingRun starts a cluster with the real node and a running pod, prints
// "READY root=<node root> dir=<work directory>" and panics as testing's
// alarm does when a go test times out.
func dyingRun() {
	ctx, cancel := context.WithTimeout(context.Background(), nodeLockWait+5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{RealNode: true, NoAdapter: true, NoFakeNodes: true, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "dying run:", err)
		os.Exit(3)
	}
	pods := c.Client().CoreV1().Pods("default")
	_, err = pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "pause", Image: PauseImage, ImagePullPolicy: corev1.PullNever}},
		},
	}, metav1.CreateOptions{})
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := pods.Get(ctx, "pause", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, nil
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dying run: pod:", err)
		_ = c.Stop()
		os.Exit(3)
	}
	fmt.Printf("READY root=%s dir=%s\n", c.nodes[0].paths.root, c.dir)
	panic("test timed out after 5m0s (as testing's alarm panics)")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// processesMentioning returns the processes whose command line names a path
// under dir.
func processesMentioning(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), dir+"/") && alive(atoi(e.Name())) {
			pids = append(pids, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return pids
}

// testSetting is the kernel setting TestWatchdog's run changes.
const testSetting = "net.ipv4.ip_forward"

// TestWatchdog checks the watchdog alone, in a second or two, with a run
// that changed one kernel setting and left one process: told "stop", it
// exits and sweeps nothing; when the run's end of the pipe closes without
// it (the run died), it holds the lock while it kills the process, restores
// the setting and removes the owner record, and only then frees the lock.
func TestWatchdog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, died := range []bool{false, true} {
		t.Run(map[bool]string{false: "stopped", true: "run died"}[died], func(t *testing.T) {
			lock := lockCleanMachine(t)
			defer lock.release() // the record is the test's own
			dir := t.TempDir()
			o, err := recordNodeOwner(filepath.Join(dir, "node"), dir, false)
			if err != nil {
				t.Fatal(err)
			}
			// The run's setting is the pod network's forwarding. The value
			// "before the run" is the machine's, or 0 should the machine
			// forward already: the record says what the watchdog (a process
			// of its own, with nodeKernelSettings as they are) must restore.
			machine := o.kernel[testSetting]
			defer func() { _ = writeSysctl(testSetting, machine) }()
			runValue, before := "1", machine
			if before == runValue {
				before = "0"
				o.kernel[testSetting] = before
				if err := os.WriteFile(nodeOwnerFile, []byte(o.encode()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeSysctl(testSetting, runValue); err != nil {
				t.Fatal(err)
			}
			left := exec.Command("sh", "-c", "sleep 300", filepath.Join(dir, "node", "shim"))
			if err := left.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = left.Process.Kill(); _ = left.Wait() }()
			exited := make(chan struct{})
			go func() { _ = left.Wait(); close(exited) }()

			wd, err := startWatchdog(lock)
			if err != nil {
				t.Fatal(err)
			}
			if !died {
				wd.stop()
				if v, _ := readSysctl(testSetting); v != runValue {
					t.Errorf("a watchdog told to stop restored %s (%s)", testSetting, v)
				}
				if _, ok := readNodeOwner(); !ok {
					t.Error("a watchdog told to stop removed the owner record")
				}
				return
			}
			// The run dies: its descriptors close, its lock with them — but
			// the watchdog's copy holds it.
			wd.pipe.Close()
			lock.f.Close()
			lock.f = nil
			t0 := time.Now()
			l, err := waitNodeLockBlocking(ctx, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			defer l.release()
			t.Logf("lock free %v after the run's end", time.Since(t0).Round(time.Millisecond))
			// The lock goes with the watchdog's last descriptor, as it exits;
			// reaping it may take a moment more. That it held the lock through
			// its sweep, the machine's state below says.
			select {
			case <-wd.done:
			case <-time.After(5 * time.Second):
				t.Error("the watchdog still ran 5 s after the lock was free")
			}
			if v, _ := readSysctl(testSetting); v != before {
				t.Errorf("%s %s after the watchdog, %s before the run", testSetting, v, before)
			}
			if _, ok := readNodeOwner(); ok {
				t.Error("owner record left after the watchdog swept")
			}
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
				t.Error("the run's process outlived the watchdog's sweep")
			}
			if log, _ := os.ReadFile(watchdogLogFile); !strings.Contains(string(log), "watchdog: swept") {
				t.Errorf("watchdog log:\n%s", log)
			}
		})
	}
}
