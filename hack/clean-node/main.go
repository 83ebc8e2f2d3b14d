// Command clean-node sweeps what a real-node run that died left on the
// machine (`make clean-node`, as root), with test/cluster's SweepRealNode:
// a run's watchdog normally does it at once, this is for when the watchdog
// died too. It never touches a run that is alive.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ebbflow/ebbflow/test/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cluster.SweepRealNode(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "clean-node:", err)
		os.Exit(1)
	}
}
