//go:build linux

package proc

import "syscall"

// sysProcAttr: own process group; SIGKILL when the parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
