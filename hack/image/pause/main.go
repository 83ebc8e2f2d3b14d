// Command pause is the kubelet's pod sandbox process, for the local real
// node (the image registry.k8s.io/pause is never pulled there): it holds the
// pod's namespaces by doing nothing until SIGTERM or SIGINT, then exits 0,
// and, being PID 1 of a pod that shares its process namespace, reaps the
// zombies orphaned children leave behind.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause (ebbflow hack/image/pause)")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not PID 1, orphans are reaped by someone else")
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	// A child may have exited before Notify: reap once up front.
	reap()
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: shutting down on %v\n", s)
		os.Exit(0)
	}
}

// reap collects every child that has exited and returns their PIDs; it never
// blocks.
func reap() []int {
	var pids []int
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return pids
		}
		pids = append(pids, pid)
	}
}
