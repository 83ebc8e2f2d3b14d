//go:build linux

package cluster

import "syscall"

// sysProcAttr puts a child in its own process group, so the whole group can be
// signalled, and has the kernel kill it if this process dies without running
// Stop (test timeout, os.Exit, SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
