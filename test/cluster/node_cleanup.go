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

	"k8s.io/apimachinery/pkg/util/wait"
)

// sweepNode removes everything a real node leaves on the machine once its
// processes are gone or must go: container processes and their cgroups,
// containerd shims, mounts under the node root, kube-proxy's rules (unless
// another kube-proxy runs), the guard and the bridge, the CNI cache entries,
// the links to its pods' logs, and it restores the kernel settings the run
// changed. It runs at every stop and, for a run that died, in its watchdog,
// at the next start or in make clean-node. It returns what it could not
// undo.
func sweepNode(ctx context.Context, o nodeOwner, logf func(string, ...any)) error {
	var errs []error
	killCgroupTree(nodeCgroup)
	waitGone(killProcessesMentioning(o.root), 10*time.Second)
	killCgroupTree(nodeCgroup) // containers a dying shim left
	errs = append(errs, unmountUnder(o.root))
	errs = append(errs, removeCgroupTree(nodeCgroup))
	errs = append(errs, unlinkCadvisorSocket(o.root))
	errs = append(errs, removeKubeProxyRules(ctx, o.dir))
	errs = append(errs, removeGuard(ctx))
	errs = append(errs, removeCNICache(cniCacheDir, o.root))
	errs = append(errs, removeContainerLogLinks(containerLogLinks, o.root))
	errs = append(errs, restoreKernelSettings(o.kernel, logf))
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
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		left = left[:0]
		for _, d := range cgroupDirs(group) {
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				left = append(left, d)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("cgroups left: %v", left)
	}
	return nil
}

// killProcessesMentioning kills the processes whose command line mentions
// a path under root — for the node root, the containerd shims of the run
// (their -address is under it), which containerd started in process groups
// of their own — and returns their ids.
func killProcessesMentioning(root string) []int {
	if !filepath.IsAbs(root) || filepath.Clean(root) == "/" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), root+"/") {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = append(killed, pid)
			}
		}
	}
	return killed
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

// containerLogLinks is where every kubelet links its containers' log files:
// a fixed path, unlike the logs themselves (podLogsDir, below the node root).
const containerLogLinks = "/var/log/containers"

// removeContainerLogLinks removes the links in dir that point below root
// (the node's pods' logs); every other entry stays.
func removeContainerLogLinks(dir, root string) error {
	return removeEntries(dir, func(e os.DirEntry, p string) bool {
		if e.Type()&os.ModeSymlink == 0 {
			return false
		}
		target, err := os.Readlink(p)
		return err == nil && strings.HasPrefix(target, root+"/")
	})
}
