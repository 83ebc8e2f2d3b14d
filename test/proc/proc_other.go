//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr: own process group. Without Linux' Pdeathsig a parent killed
// before its clean-ups run leaves the child behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
