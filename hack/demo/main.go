// Command demo runs Ebbflow end to end on a local cluster, as its users run
// it (`make demo`, as root).
//
// By default on the cluster's real node (test/realnode/kit): the images
// built by hack/image imported into the node's containerd, the Helm chart
// installed with helm into a namespace enforcing the restricted Pod
// Security Standard, and the sample app (test/sampleapp) under real HTTP
// load from a bounded host-process load generator (test/loadgen) through
// its Services. kube-controller-manager's HPA scales web-hpa and an ebbflow
// Autoscaler with the same spec scales web-ebbflow; a dry-run Autoscaler on
// web-hpa says what it would do; a worker Autoscaler takes the queue's
// worker to zero and wakes it on a message. It prints a live table, `kubectl
// ebbflow explain` of a real decision, writes a plot and fails unless the
// web workloads scaled up and back down and the worker went to zero and
// woke.
//
// With --fake-nodes, the earlier demo: kwok's fake nodes, manifests/examples
// and test/fakeapp's traffic, the adapter and autoscaler as host
// processes (no root needed).
//
//	go run ./hack/demo --duration 2m
//	go run ./hack/demo --fake-nodes
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
	// A reader of the output that is gone (`make demo | tee demo.log`, the
	// tee Ctrl-C'd with it) must not end the demo before its teardown: with
	// SIGPIPE notified, a write to the closed pipe fails instead.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	if opts.fakeNodes {
		err = runFake(ctx, opts, os.Stdout)
	} else {
		err = runReal(ctx, opts, os.Stdout)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo: FAILED:", err)
		os.Exit(1)
	}
}
