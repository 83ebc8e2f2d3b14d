package imagetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/proc"
)

// runPrefix names the directories of runs under os.TempDir(); a run's
// directory holds owner.pid, the PID of the test process that made it.
const runPrefix = "ebbflow-imagetest-"

// defaultCaps are the capabilities ctr 1.6 gives a container unless told
// otherwise. `ctr run --cap-drop` takes no "ALL" (CAP_ALL is accepted and
// drops nothing), so the runs drop each of these; the tests check that the
// process then has none.
var defaultCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"}

// containerd is a private containerd: its root, state, sockets and runc
// state under dir, images and containers in namespace ns. It shares nothing
// with a containerd of the machine (none is touched).
type containerd struct {
	dir, runcRoot string
	ctr           cluster.Ctr
	proc          *proc.Process
}

// startContainerd starts a private containerd and registers its teardown
// (containers, shims, mounts, cgroups, the directory), which also runs when
// the test fails. Leftovers of runs whose test process died are removed
// first.
func startContainerd(ctx context.Context, t *testing.T) *containerd {
	t.Helper()
	sweepDeadRuns(t)
	dir, err := os.MkdirTemp("", runPrefix)
	if err != nil {
		t.Fatal(err)
	}
	c := &containerd{dir: dir, runcRoot: filepath.Join(dir, "runc"),
		ctr: cluster.Ctr{Address: filepath.Join(dir, "containerd.sock"), Namespace: fmt.Sprintf("%s%d", runPrefix, os.Getpid())}}
	t.Cleanup(func() { c.teardown(t) })
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(c.config()), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("containerd", "--config", config, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	// Dies with the test process; its shims are removed by the next run's sweep.
	if c.proc, err = proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var last error
	err = proc.WaitFor(waitCtx, c.proc, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, last = c.ctr.Run(ctx, "version")
		return last == nil, nil
	})
	if err != nil {
		logs, _ := os.ReadFile(log.Name())
		if errors.Is(err, proc.ErrExited) {
			t.Fatalf("containerd exited: %v\n%s", c.proc.Err(), logs)
		}
		t.Fatalf("containerd did not answer: %v\n%s", last, logs)
	}
	return c
}

// config is containerd's config.toml (version 2, containerd 1.6): its own
// paths, no CRI (ctr needs none), only the overlayfs and native snapshotters.
func (c *containerd) config() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, filepath.Join(c.dir, "root"), filepath.Join(c.dir, "state"), c.ctr.Address, c.ctr.Address+".ttrpc", filepath.Join(c.dir, "opt"))
}

// runArgs are the `ctr run` arguments every container of the tests gets:
// a read-only root filesystem, every capability dropped, runc's state under
// the run's directory; the image's own user and entrypoint; the default
// network: a new network namespace holding only loopback (never --net-host,
// never --cni).
func (c *containerd) runArgs(extra ...string) []string {
	args := []string{"run", "--read-only", "--runc-root", c.runcRoot}
	for _, cp := range defaultCaps {
		args = append(args, "--cap-drop", cp)
	}
	return append(args, extra...)
}

// teardown removes everything the run started: containers and their tasks,
// containerd, any shim left, mounts under the directory, the namespace's
// cgroups and the directory; then it checks that nothing is left.
func (c *containerd) teardown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.proc != nil {
		if out, err := c.ctr.Run(ctx, "containers", "list", "--quiet"); err == nil {
			for id := range strings.FieldsSeq(out) {
				c.ctr.Run(ctx, "task", "delete", "--force", id)
				c.ctr.Run(ctx, "containers", "delete", id)
			}
		}
		c.proc.Stop(15 * time.Second)
	}
	removeRun(c.dir, c.ctr.Namespace)
	if pids := shimsOf(c.dir); len(pids) > 0 {
		t.Errorf("shims of %s still running: %v", c.dir, pids)
	}
	if m := mountsUnder(c.dir); len(m) > 0 {
		t.Errorf("mounts left under %s: %v", c.dir, m)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", c.dir, err)
	}
}

// removeRun kills the shims of the run in dir (by PID), unmounts what is
// mounted under dir, removes the cgroups of namespace ns and then dir.
func removeRun(dir, ns string) {
	for _, pid := range shimsOf(dir) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for range 50 {
		if len(shimsOf(dir)) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	mounts := mountsUnder(dir)
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) }) // deepest first
	for _, m := range mounts {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
	// ctr puts each container in the cgroup /NS/ID of every hierarchy; runc
	// removes /NS/ID, the empty /NS stays.
	if ns != "" {
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ns, "*"))
		for _, d := range dirs {
			os.Remove(d)
		}
		dirs, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ns))
		for _, d := range append(dirs, filepath.Join("/sys/fs/cgroup", ns)) {
			os.Remove(d)
		}
	}
	os.RemoveAll(dir)
}

// sweepDeadRuns removes the runs whose test process is gone (killed before
// its cleanup ran, e.g. by go test's -timeout).
func sweepDeadRuns(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) == nil {
			continue // alive: another run, leave it alone
		}
		t.Logf("removing %s, left by test process %d", dir, pid)
		for _, p := range processesWith(filepath.Join(dir, "config.toml")) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		removeRun(dir, fmt.Sprintf("%s%d", runPrefix, pid))
	}
}

// shimsOf returns the PIDs of containerd shims serving the containerd whose
// socket is under dir.
func shimsOf(dir string) []int {
	var pids []int
	for _, pid := range processesWith(filepath.Join(dir, "containerd.sock")) {
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.HasPrefix(string(comm), "containerd-shim") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// processesWith returns the PIDs of processes with arg among their arguments.
func processesWith(arg string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder returns the mount points under dir, from /proc/self/mountinfo.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], dir+"/")) {
			out = append(out, fields[4])
		}
	}
	return out
}
