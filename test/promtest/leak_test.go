//go:build linux

package promtest_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/promtest"
)

// helperEnv selects the behaviour of TestLeakHelper when the test binary runs
// itself; helperPIDFile is where the helper writes the Prometheus PID.
const (
	helperEnv     = "PROMTEST_LEAK_HELPER"
	helperPIDFile = "PROMTEST_LEAK_PIDFILE"

	prSetChildSubreaper = 36 // PR_SET_CHILD_SUBREAPER from linux/prctl.h
)

// TestLeakHelper is not a test on its own: TestNoProcessLeftBehind runs the
// test binary again with helperEnv set, and this function then starts
// Prometheus and ends the test abnormally.
func TestLeakHelper(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	prom := promtest.Start(t, promtest.Options{})
	pid, err := pidListening(prom.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(helperPIDFile), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "panic":
		panic("deliberate panic with Prometheus running")
	case "exit":
		os.Exit(3) // no cleanups run; only Pdeathsig can stop Prometheus
	}
}

// TestNoProcessLeftBehind shows that Prometheus dies with the test when the
// test panics (t.Cleanup runs) and when the test binary exits without cleanups.
func TestNoProcessLeftBehind(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		return
	}
	// Adopt orphaned descendants so a Prometheus killed by Pdeathsig is reaped
	// here instead of lingering as a zombie under PID 1.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	for _, mode := range []string{"panic", "exit"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			cmd := exec.Command(os.Args[0], "-test.run=^TestLeakHelper$", "-test.count=1")
			// The helper's own t.TempDir goes with this test's: it exits
			// without cleanups.
			cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperPIDFile+"="+pidFile, "TMPDIR="+t.TempDir())
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err == nil {
				t.Fatalf("helper succeeded, want an abnormal end:\n%s", out.String())
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("helper wrote no pid: %v\n%s", err, out.String())
			}
			pid, err := strconv.Atoi(string(data))
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for reap(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("prometheus pid %d still exists after the test binary ended", pid)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// reap reports whether pid still exists, reaping it if it is a dead child of
// this process. A zombie counts as existing: it may still be on its way to
// this subreaper, and must be reaped here rather than left to PID 1.
func reap(pid int) bool {
	var ws syscall.WaitStatus
	if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
		return false
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// pidListening finds the child prometheus process of this test binary whose
// command line names addr.
func pidListening(addr string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), "--web.listen-address="+addr) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no process listening on %s", addr)
}
