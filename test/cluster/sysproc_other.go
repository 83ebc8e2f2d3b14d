//go:build !linux

package cluster

import "syscall"

// sysProcAttr puts a child in its own process group so the whole group can be
// signalled. Without Linux's Pdeathsig, children outlive a parent that dies
// without running Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
