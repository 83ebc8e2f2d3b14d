//go:build linux

package promtest

import "syscall"

// sysProcAttr puts Prometheus in its own process group, so the whole group can
// be signalled, and asks the kernel to kill it if the test binary dies without
// running its cleanups (test timeout, os.Exit, SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
