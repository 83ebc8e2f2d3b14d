// Command sampleapp is the sample workload of Ebbflow's real-node tests and
// demo (image ebbflow-sampleapp): an HTTP server burning cpu per request, an
// in-memory queue, or a queue worker. See package test/sampleapp.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ebbflow/ebbflow/test/sampleapp"
)

func main() {
	cfg := sampleapp.Default()
	fs := flag.NewFlagSet("sampleapp", flag.ExitOnError)
	cfg.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if errs := cfg.Validate(); len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintln(os.Stderr, "sampleapp:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := sampleapp.Run(ctx, cfg, log); err != nil {
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}
