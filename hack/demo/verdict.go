package main

import (
	"errors"
	"fmt"
)

// required are the workloads that must scale up and back down for the demo
// to pass; the others are reported only.
var required = []string{"web", "worker"}

// outcome is how one workload's replica count moved during the demo.
type outcome struct {
	Name       string
	Start, Max int32
	Final      int32
	Up, Down   bool
}

// judge returns the outcome of a workload over the samples: Up if its
// replica count went above the first sample's, Down if after reaching its
// maximum it came back to the first sample's count.
func judge(samples []sample, name string) outcome {
	o := outcome{Name: name}
	if len(samples) == 0 {
		return o
	}
	o.Start = samples[0].W[name].Replicas
	peakAt := 0
	for i, s := range samples {
		if r := s.W[name].Replicas; r > o.Max {
			o.Max, peakAt = r, i
		}
	}
	o.Final = samples[len(samples)-1].W[name].Replicas
	o.Up = o.Max > o.Start
	for _, s := range samples[peakAt:] {
		if o.Up && s.W[name].Replicas <= o.Start {
			o.Down = true
		}
	}
	o.Down = o.Down && o.Final <= o.Start
	return o
}

func (o outcome) String() string {
	return fmt.Sprintf("%-6s replicas %d -> max %d -> final %d (scaled up: %t, back down: %t)",
		o.Name, o.Start, o.Max, o.Final, o.Up, o.Down)
}

// verdict judges every workload and returns an error naming the required
// ones that did not scale up and back down.
func verdict(samples []sample) ([]outcome, error) {
	var outs []outcome
	for _, name := range workloads {
		outs = append(outs, judge(samples, name))
	}
	var errs []error
	for _, o := range outs {
		for _, r := range required {
			if o.Name == r && !(o.Up && o.Down) {
				errs = append(errs, fmt.Errorf("%s did not scale up and back down: %v", r, o))
			}
		}
	}
	return outs, errors.Join(errs...)
}

// settled reports whether every required workload has scaled up during the
// demo and is now back at its starting replica count, with its HPA agreeing.
func settled(samples []sample) bool {
	if len(samples) == 0 {
		return false
	}
	last := samples[len(samples)-1]
	for _, r := range required {
		o := judge(samples, r)
		if !o.Up || !o.Down || last.W[r].Desired > o.Start {
			return false
		}
	}
	return true
}
