// Package proc runs the child processes of the test harnesses (Prometheus, the
// local cluster's components): each in its own process group, so the group can
// be signalled as a whole, and on Linux killed by the kernel if the test binary
// dies without running its clean-ups.
package proc

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Process is a started child. Its methods are safe for concurrent use.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start starts cmd (whose streams, directory and environment the caller has
// set) in its own process group. Linux' parent-death signal fires when the
// forking OS thread exits, not the process, so the fork happens on a locked
// thread that stays alive until the child has been reaped.
func Start(cmd *exec.Cmd) (*Process, error) {
	cmd.SysProcAttr = sysProcAttr()
	p := &Process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return p, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the exit status; meaningful once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Exited reports whether the process has been reaped.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process group while the leader is unreaped, so the
// group id cannot have been reused.
func (p *Process) Signal(sig syscall.Signal) {
	if !p.Exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Kill sends SIGKILL to the process group (a crash, as far as the child can tell).
func (p *Process) Kill() { p.Signal(syscall.SIGKILL) }

// Stop sends SIGTERM to the process group, SIGKILL after grace, and returns once
// the process has been reaped; children that outlived the group's leader are
// killed with the group. It is safe to call repeatedly.
func (p *Process) Stop(grace time.Duration) {
	p.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
		<-p.done
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}
