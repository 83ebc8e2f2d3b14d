// Command demo runs Ebbflow end to end on a local cluster: it starts the
// control plane, Prometheus, ebbflow-adapter and ebbflow-autoscaler
// (test/cluster), applies manifests/examples, plays a traffic profile with
// test/simulator while the upstream HPA controller scales web, api and worker
// and ebbflow's Autoscaler scales web-ebbflow (web's twin, same spec and
// load), prints a live table, writes a plot, compares web's and
// web-ebbflow's replica sequences and fails unless the workloads scaled up
// and back down.
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
