package main

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// options are the demo's command-line settings.
type options struct {
	fakeNodes   bool          // kwok nodes and the fake app instead of the real node
	duration    time.Duration // length of the traffic profile
	settle      time.Duration // longest wait after the profile for scale-down
	printEvery  time.Duration // table row interval
	sampleEvery time.Duration
	manifests   string // directory with kustomization.yaml (fake nodes)
	rules       string // adapter rule file (fake nodes)
	output      string // directory for demo.png
	workDir     string // cluster directory; empty means a temporary one
	peak        float64
}

// Defaults that differ between the real node and the fake nodes.
const (
	realDuration, fakeDuration = 3 * time.Minute, 4 * time.Minute
	realPeak, fakePeak         = 20, 80
)

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.BoolVar(&o.fakeNodes, "fake-nodes", false, "run on kwok's fake nodes with test/fakeapp's traffic instead of the real node (no root needed)")
	fs.DurationVar(&o.duration, "duration", 0, fmt.Sprintf("length of the traffic profile (ramp up, plateau, ramp down, tail); default %v, %v with --fake-nodes", realDuration, fakeDuration))
	fs.DurationVar(&o.settle, "settle", 90*time.Second, "longest extra wait after the profile for the workloads to scale back down")
	fs.DurationVar(&o.printEvery, "print-every", 5*time.Second, "interval between table rows")
	fs.DurationVar(&o.sampleEvery, "sample-every", 2*time.Second, "interval between samples for the plot")
	fs.StringVar(&o.manifests, "manifests", "manifests/examples", "with --fake-nodes: directory of the example manifests (kustomization.yaml)")
	fs.StringVar(&o.rules, "rules", "manifests/examples/rules.yaml", "with --fake-nodes: adapter rule file")
	fs.StringVar(&o.output, "output", "_output/demo", "directory for demo.png")
	fs.StringVar(&o.workDir, "workdir", "", "cluster work directory, kept afterwards (default: a temporary one, removed)")
	fs.Float64Var(&o.peak, "peak", 0, fmt.Sprintf("peak request rate of each web service, requests per second; default %d, %d with --fake-nodes", realPeak, fakePeak))
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("flags: %w", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	o = o.withDefaults()
	return o, o.validate()
}

// withDefaults fills the settings left at zero with the mode's defaults.
func (o options) withDefaults() options {
	dur, peak := realDuration, float64(realPeak)
	if o.fakeNodes {
		dur, peak = fakeDuration, fakePeak
	}
	if o.duration == 0 {
		o.duration = dur
	}
	if o.peak == 0 {
		o.peak = peak
	}
	return o
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
	// The real node's pods are real: a peak beyond what six replicas at the
	// target serve only pins them at the maximum and loads the machine.
	lo, hi := 20.0, 1000.0
	if !o.fakeNodes {
		lo, hi = 8, 40
	}
	if o.peak < lo || o.peak > hi {
		errs = append(errs, fmt.Errorf("--peak %v: want %v..%v", o.peak, lo, hi))
	}
	return errors.Join(errs...)
}
