// Command demo runs Ebbflow end to end on a local cluster: it starts the
// control plane, Prometheus and ebbflow-adapter (test/cluster), applies
// manifests/examples, plays a traffic profile with test/simulator while the
// upstream HPA controller scales the workloads, prints a live table, writes a
// plot and fails unless the workloads scaled up and back down.
//
//	go run ./hack/demo --duration 4m
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, opts, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: FAILED:", err)
		os.Exit(1)
	}
}
