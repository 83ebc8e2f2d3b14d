package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// required are the workloads that must scale up and back down for the demo
// to pass; the others are reported only.
var required = []string{"web", webEbbflow, "worker"}

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
	return fmt.Sprintf("%-11s replicas %d -> max %d -> final %d (scaled up: %t, back down: %t)",
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

// sequence returns the values that f takes over the samples, with
// consecutive repeats collapsed and zeros (no status yet) left out.
func sequence(samples []sample, f func(sample) int32) []int32 {
	var out []int32
	for _, s := range samples {
		if v := f(s); v != 0 && (len(out) == 0 || out[len(out)-1] != v) {
			out = append(out, v)
		}
	}
	return out
}

// printComparison writes the replica and desired-replica sequences of web
// (kube-controller-manager's HPA) and web-ebbflow (ebbflow's Autoscaler with
// the same spec and the same load) and whether they are equal. They are
// reported, not judged: the two controllers sync at different moments of the
// same period, so a step may be seen one sample apart.
func printComparison(w io.Writer, samples []sample) {
	for _, field := range []struct {
		name string
		f    func(workloadState) int32
	}{
		{"replicas", func(ws workloadState) int32 { return ws.Replicas }},
		{"desired", func(ws workloadState) int32 { return ws.Desired }},
	} {
		web := sequence(samples, func(s sample) int32 { return field.f(s.W["web"]) })
		eas := sequence(samples, func(s sample) int32 { return field.f(s.W[webEbbflow]) })
		fmt.Fprintf(w, "demo: %s web         (kube-controller-manager HPA): %v\n", field.name, web)
		fmt.Fprintf(w, "demo: %s web-ebbflow (ebbflow Autoscaler):          %v\n", field.name, eas)
		equal := slices.Equal(web, eas)
		fmt.Fprintf(w, "demo: %s sequences equal: %t\n", field.name, equal)
		if !equal {
			fmt.Fprintln(w, "demo:   (the controllers evaluate at different moments of the sync period while the load ramps, and each then sees its own pods' rate; test/e2e compares decisions on identical metrics)")
		}
	}
}
