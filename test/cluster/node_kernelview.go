package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// kubeletKernelDefaults are the kernel settings the kubelet's container
// manager checks at start (setupKernelTunables in pkg/kubelet/cm, v1.37),
// with the values it wants. With protectKernelDefaults: false it writes them
// into the machine's kernel (an oops would then reboot the machine); with
// true it refuses to start when one differs. The real node runs it with
// true, in a view of its own where these files read as wanted: the kernel
// keeps the machine's values, and nothing is written.
var kubeletKernelDefaults = []struct{ name, value string }{
	{"vm.overcommit_memory", "1"},
	{"vm.panic_on_oom", "0"},
	{"kernel.panic", "10"},
	{"kernel.panic_on_oops", "1"},
	{"kernel.keys.root_maxkeys", "1000000"},
	{"kernel.keys.root_maxbytes", "25000000"},
}

// kernelViewScript runs in the kubelet's own mount namespace (unshare
// --mount): it makes /proc private there, so nothing below propagates back
// to the machine's namespace, binds each file given (named by its dotted
// setting) over the setting's /proc/sys file, and execs the command after
// "--". The mount namespace ends with the kubelet.
const kernelViewScript = `set -e
mount --make-rprivate /proc
while [ "$1" != -- ]; do
	mount --bind "$1" "/proc/sys/$(basename "$1" | tr . /)"
	shift
done
shift
exec "$@"`

// kubeletInKernelView returns the command line that runs bin with args in
// the kernel view: the files with kubeletKernelDefaults' values are written
// to dir.
func kubeletInKernelView(dir, bin string, args []string) (string, []string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("kernel view: %w", err)
	}
	argv := []string{"--mount", "--propagation", "unchanged", "--", "/bin/sh", "-c", kernelViewScript, "kernel-view"}
	for _, s := range kubeletKernelDefaults {
		f := filepath.Join(dir, s.name)
		if err := os.WriteFile(f, []byte(s.value+"\n"), 0o644); err != nil {
			return "", nil, fmt.Errorf("kernel view: %w", err)
		}
		argv = append(argv, f)
	}
	argv = append(append(argv, "--", bin), args...)
	return "unshare", argv, nil
}

// shareKubeletRoot bind-mounts the kubelet's root directory onto itself in
// the machine's mount namespace and makes it shared, before the kubelet
// starts in its own namespace: the volumes it mounts there (secrets,
// projected tokens, emptyDir on tmpfs) then propagate to this namespace,
// where containerd and runc mount them into containers. The kubelet does the
// same itself when the directory is not shared yet (and does nothing when it
// is); unmountUnder removes the mount with the node.
func shareKubeletRoot(dir string) error {
	shared, err := sharedMount(dir)
	if err != nil {
		return err
	}
	if shared {
		return nil
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", dir, err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s shared: %w", dir, err)
	}
	return nil
}

// sharedMount says whether dir is itself a mount point in this mount
// namespace with shared propagation.
func sharedMount(dir string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("read mounts: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || strings.ReplaceAll(f[4], `\040`, " ") != dir {
			continue
		}
		for _, opt := range f[6:] {
			if opt == "-" {
				break
			}
			if strings.HasPrefix(opt, "shared:") {
				return true, nil
			}
		}
	}
	return false, nil
}
