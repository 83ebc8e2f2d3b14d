package backgroundcpu

import (
	"bytes"
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

	"github.com/ebbflow/ebbflow/test/buildtools"
)

// hierarchy is where the script makes its group on this machine, and the
// file and value of the default weight (shares 128).
type hierarchy struct{ root, file, defaultValue string }

func cpuHierarchy(t *testing.T) hierarchy {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatalf("run as root: the script's cgroup needs it (make test runs as root for the real node)")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		ctl, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " cpu ") {
			t.Fatalf("cgroup v2 without the cpu controller enabled for the root's children: the script falls back to nice; enable it to test the group")
		}
		return hierarchy{"/sys/fs/cgroup", "cpu.weight", "13"}
	}
	return hierarchy{"/sys/fs/cgroup/cpu", "cpu.shares", "128"}
}

func script(t *testing.T) string {
	return filepath.Join(buildtools.MustRepoRoot(t), "hack", "background-cpu.sh")
}

// run runs the script with args and extra environment; it returns stdout,
// stderr and the exit code.
func run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(script(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script(t), err)
	}
	return out.String(), errb.String(), code
}

// groups lists the script's groups on the machine.
func groups(t *testing.T, h hierarchy) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(h.root, "ebbflow-background-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cgroupOf is the process's group in the cpu hierarchy ("/" for the root).
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" || (parts[0] == "0" && parts[1] == "") {
				return parts[2]
			}
		}
	}
	t.Fatalf("no cpu line in /proc/%d/cgroup:\n%s", pid, data)
	return ""
}

func TestCommandRunsInLowWeightGroup(t *testing.T) {
	h := cpuHierarchy(t)
	before := groups(t, h)
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"default weight", nil, h.defaultValue},
		{"shares from the environment", []string{"EBBFLOW_BACKGROUND_SHARES=512"}, map[string]string{"cpu.shares": "512", "cpu.weight": "50"}[h.file]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The command prints its own group and the group's weight, and
			// exits 3.
			out, stderr, code := run(t, tc.env, "sh", "-c",
				`g=$(grep -E '(^|[:,])cpu([,:]|$)|^0::' /proc/self/cgroup | head -1 | cut -d: -f3); echo "$g"; cat "`+h.root+`$g/`+h.file+`"; exit 3`)
			if code != 3 {
				t.Fatalf("exit code %d, want the command's 3 (stderr %q)", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "/ebbflow-background-") {
				t.Fatalf("the command ran in group %q, want /ebbflow-background-<pid> (output %q, stderr %q)", lines[0], out, stderr)
			}
			if lines[1] != tc.want {
				t.Errorf("%s = %s, want %s", h.file, lines[1], tc.want)
			}
			if _, err := os.Stat(filepath.Join(h.root, lines[0])); !os.IsNotExist(err) {
				t.Errorf("group %s still there after the command ended (stat: %v)", lines[0], err)
			}
		})
	}
	if after := groups(t, h); len(after) > len(before) {
		t.Errorf("groups left: %v (before: %v)", after, before)
	}
}

func TestBadSharesRefused(t *testing.T) {
	for _, v := range []string{"0", "1", "abc", "2048", "-5"} {
		_, stderr, code := run(t, []string{"EBBFLOW_BACKGROUND_SHARES=" + v}, "true")
		if code != 2 || !strings.Contains(stderr, "EBBFLOW_BACKGROUND_SHARES="+v) {
			t.Errorf("shares %q: exit %d, stderr %q; want exit 2 naming the variable", v, code, stderr)
		}
	}
}

func TestLeftoverProcessMovedOutAndNamed(t *testing.T) {
	h := cpuHierarchy(t)
	out, stderr, code := run(t, nil, "sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("pid of the leftover: %q", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if !strings.Contains(stderr, strconv.Itoa(pid)+" sleep 120") {
		t.Errorf("stderr does not name the leftover process %d: %q", pid, stderr)
	}
	if g := cgroupOf(t, pid); g != "/" {
		t.Errorf("leftover process is in %q, want the root group", g)
	}
	for _, g := range groups(t, h) {
		if strings.Contains(stderr, g) {
			t.Errorf("group %s still there", g)
		}
	}
}

func TestSignalReachesCommandAndGroupGoes(t *testing.T) {
	h := cpuHierarchy(t)
	// The command ends on its own after 20 s, so that a script that does
	// not pass the signal on fails the test instead of hanging it.
	cmd := exec.Command(script(t), "sh", "-c", `trap 'echo got-term; exit 7' TERM; i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done`)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := filepath.Join(h.root, fmt.Sprintf("ebbflow-background-%d", cmd.Process.Pid))
	deadline := time.Now().Add(10 * time.Second)
	for {
		procs, _ := os.ReadFile(filepath.Join(group, "cgroup.procs"))
		if len(bytes.TrimSpace(procs)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no process in %s within 10 s", group)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Errorf("script ended with %v, want the command's exit 7", err)
	}
	if !strings.Contains(out.String(), "got-term") {
		t.Errorf("the command did not get SIGTERM (output %q)", out.String())
	}
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Errorf("group %s still there after SIGTERM (stat: %v)", group, err)
	}
}

func TestStaleGroupOfKilledRunRemoved(t *testing.T) {
	h := cpuHierarchy(t)
	// A pid that has gone: a process that has ended.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(h.root, fmt.Sprintf("ebbflow-background-%d", dead.Process.Pid))
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(stale)
	// A group whose script still runs stays: this test's own pid.
	live := filepath.Join(h.root, fmt.Sprintf("ebbflow-background-%d", os.Getpid()))
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(live)
	if _, stderr, code := run(t, nil, "true"); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale group %s of a gone run still there (stat: %v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("group %s of a live run removed: %v", live, err)
	}
}

func TestWithoutRootRunsAtNice10(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatalf("run as root: the test drops to nobody to see the fallback")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) not found: %v", err)
	}
	// The script goes in on stdin: nobody may not be able to read the
	// checkout.
	text, err := os.ReadFile(script(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "bash", "-s", "sh", "-c", "cut -d' ' -f19 /proc/self/stat")
	cmd.Dir = "/"
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(text), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v (stderr %q)", err, errb.String())
	}
	if got := strings.TrimSpace(out.String()); got != "10" {
		t.Errorf("nice %q without root, want 10", got)
	}
	if !strings.Contains(errb.String(), "running at nice 10") {
		t.Errorf("stderr does not say it falls back: %q", errb.String())
	}
}
