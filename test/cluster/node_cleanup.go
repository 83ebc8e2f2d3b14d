package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The machine-wide state of the real node: one real node at a time (the
// lock), and the record of the run that holds it, so that the next run can
// sweep what a run killed with SIGKILL left behind.
const (
	nodeStateDir  = "/run/ebbflow-real-node"
	nodeLockFile  = nodeStateDir + "/lock"
	nodeOwnerFile = nodeStateDir + "/owner" // "root=<node root>\nip_forward=<0|1>\n"
	ipForwardPath = "/proc/sys/net/ipv4/ip_forward"
	cniCacheDir   = "/var/lib/cni/results"
	// nodeCgroup is the kubelet's cgroupRoot in every hierarchy: the pods
	// of the run, and nothing else, live below it.
	nodeCgroup = "ebbflow-node"
)

// nodeLock holds the machine's real-node lock.
type nodeLock struct{ f *os.File }

// acquireNodeLock waits for the machine's real-node lock until ctx is done.
func acquireNodeLock(ctx context.Context, log func(string, ...any)) (*nodeLock, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the real node needs root (containerd, the kubelet and the pod network); run the tests as root")
	}
	if err := os.MkdirAll(nodeStateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", nodeStateDir, err)
	}
	f, err := os.OpenFile(nodeLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open real-node lock: %w", err)
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &nodeLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", nodeLockFile, err)
		}
		if !waited {
			log("another run holds the real-node lock %s; waiting", nodeLockFile)
			waited = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the real-node lock: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (l *nodeLock) release() {
	_ = os.Remove(nodeOwnerFile)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// nodeOwner is what a run records of itself while it holds the lock.
type nodeOwner struct {
	root      string // the node root of the run
	ipForward string // the machine's ip_forward before the run
}

func readNodeOwner() (nodeOwner, bool) {
	data, err := os.ReadFile(nodeOwnerFile)
	if err != nil {
		return nodeOwner{}, false
	}
	var o nodeOwner
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "root":
			o.root = v
		case "ip_forward":
			o.ipForward = v
		}
	}
	return o, o.root != ""
}

// recordNodeOwner saves the machine's ip_forward and the run's node root.
func recordNodeOwner(root string) (nodeOwner, error) {
	fwd, err := os.ReadFile(ipForwardPath)
	if err != nil {
		return nodeOwner{}, fmt.Errorf("read ip_forward: %w", err)
	}
	o := nodeOwner{root: root, ipForward: strings.TrimSpace(string(fwd))}
	if err := os.WriteFile(nodeOwnerFile, []byte("root="+o.root+"\nip_forward="+o.ipForward+"\n"), 0o644); err != nil {
		return nodeOwner{}, fmt.Errorf("record real-node owner: %w", err)
	}
	return o, nil
}

// sweepNode removes everything a real node leaves on the machine once its
// processes are gone or must go: container processes and their cgroups,
// containerd shims, mounts under the node root, the guard and the bridge,
// kube-proxy's rules, the CNI cache entries, and it restores ip_forward. It
// runs at every stop and, for a run that died, at the next start. It returns
// what it could not undo.
func sweepNode(ctx context.Context, o nodeOwner, kubeProxy string) error {
	var errs []error
	killCgroupTree(nodeCgroup)
	killProcessesMentioning(o.root)
	killCgroupTree(nodeCgroup) // containers a dying shim left
	errs = append(errs, unmountUnder(o.root))
	errs = append(errs, removeCgroupTree(nodeCgroup))
	errs = append(errs, unlinkCadvisorSocket(o.root))
	if kubeProxy != "" {
		if _, err := run(ctx, kubeProxy, "--cleanup"); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeKubeChains(ctx))
	errs = append(errs, removeGuard(ctx))
	if matches, _ := filepath.Glob(filepath.Join(cniCacheDir, cniNetworkName+"-*")); len(matches) > 0 {
		for _, m := range matches {
			errs = append(errs, os.Remove(m))
		}
	}
	if o.ipForward == "0" || o.ipForward == "1" {
		if err := os.WriteFile(ipForwardPath, []byte(o.ipForward+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore ip_forward: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers and
// the unified one).
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*")
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			out = append(out, d)
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
		out = append(out, "/sys/fs/cgroup")
	}
	return out
}

// cgroupDirs returns the directories of group in every hierarchy, deepest
// first.
func cgroupDirs(group string) []string {
	var dirs []string
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, group), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// killCgroupTree sends SIGKILL to every process in group's cgroups.
func killCgroupTree(group string) {
	for _, d := range cgroupDirs(group) {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// removeCgroupTree removes group's (empty) cgroups, retrying while the
// killed processes exit.
func removeCgroupTree(group string) error {
	var left []string
	for range 50 {
		left = left[:0]
		for _, d := range cgroupDirs(group) {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				left = append(left, d)
			}
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("cgroups left: %v", left)
}

// killProcessesMentioning kills the processes whose command line mentions
// root: the containerd shims of the run (their -address is under it), which
// containerd started in process groups of their own.
func killProcessesMentioning(root string) {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), root+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder detaches every mount below root, deepest first.
func unmountUnder(root string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			p := strings.ReplaceAll(fields[4], `\040`, " ")
			if p == root || strings.HasPrefix(p, root+"/") {
				points = append(points, p)
			}
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
