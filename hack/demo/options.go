package main

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// options are the demo's command-line settings.
type options struct {
	duration    time.Duration // length of the traffic profile
	settle      time.Duration // longest wait after the profile for scale-down
	printEvery  time.Duration // table row interval
	sampleEvery time.Duration
	manifests   string // directory with kustomization.yaml
	rules       string // adapter rule file
	output      string // directory for demo.png
	workDir     string // cluster directory; empty means a temporary one
	peak        float64
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 4*time.Minute, "length of the traffic profile (ramp up, plateau, ramp down, tail)")
	fs.DurationVar(&o.settle, "settle", 90*time.Second, "longest extra wait after the profile for the workloads to scale back down")
	fs.DurationVar(&o.printEvery, "print-every", 5*time.Second, "interval between table rows")
	fs.DurationVar(&o.sampleEvery, "sample-every", 2*time.Second, "interval between samples for the plot")
	fs.StringVar(&o.manifests, "manifests", "manifests/examples", "directory of the example manifests (kustomization.yaml)")
	fs.StringVar(&o.rules, "rules", "manifests/examples/rules.yaml", "adapter rule file")
	fs.StringVar(&o.output, "output", "_output/demo", "directory for demo.png")
	fs.StringVar(&o.workDir, "workdir", "", "cluster work directory, kept afterwards (default: a temporary one, removed)")
	fs.Float64Var(&o.peak, "peak", 80, "peak request rate of the web service, requests per second")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	return o, o.validate()
}

func (o options) validate() error {
	var errs []error
	if o.duration < time.Minute || o.duration > 20*time.Minute {
		errs = append(errs, fmt.Errorf("--duration %v: want 1m..20m", o.duration))
	}
	if o.settle < 0 || o.settle > 10*time.Minute {
		errs = append(errs, fmt.Errorf("--settle %v: want 0..10m", o.settle))
	}
	if o.printEvery < time.Second || o.sampleEvery < 500*time.Millisecond {
		errs = append(errs, errors.New("--print-every must be >= 1s and --sample-every >= 500ms"))
	}
	if o.peak < 20 || o.peak > 1000 {
		errs = append(errs, fmt.Errorf("--peak %v: want 20..1000", o.peak))
	}
	return errors.Join(errs...)
}
