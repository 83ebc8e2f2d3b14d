//go:build unix && !linux

package promtest

import "syscall"

// sysProcAttr puts Prometheus in its own process group, so the whole group can
// be signalled. Without Linux's Pdeathsig a test binary killed before its
// cleanups run can leave Prometheus behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
