package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// required are the workloads of the fake-node demo that must scale up and
// back down for it to pass; the others are reported only.
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

// verdict judges every named workload and returns an error naming the
// required ones that did not scale up and back down.
func verdict(samples []sample, names, required []string) ([]outcome, error) {
	var outs []outcome
	for _, name := range names {
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
func settled(samples []sample, required []string) bool {
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

// printComparison writes the replica and desired-replica sequences of hpa
// (scaled by kube-controller-manager's HPA) and eas (by ebbflow's Autoscaler
// with the same spec and the same load) and whether they are equal. They are
// reported, not judged: the two controllers sync at different moments of the
// same period, so a step may be seen one sample apart.
func printComparison(w io.Writer, samples []sample, hpa, eas string) {
	for _, field := range []struct {
		name string
		f    func(workloadState) int32
	}{
		{"replicas", func(ws workloadState) int32 { return ws.Replicas }},
		{"desired", func(ws workloadState) int32 { return ws.Desired }},
	} {
		web := sequence(samples, func(s sample) int32 { return field.f(s.W[hpa]) })
		easSeq := sequence(samples, func(s sample) int32 { return field.f(s.W[eas]) })
		fmt.Fprintf(w, "demo: %s %-11s (kube-controller-manager HPA): %v\n", field.name, hpa, web)
		fmt.Fprintf(w, "demo: %s %-11s (ebbflow Autoscaler):          %v\n", field.name, eas, easSeq)
		equal := slices.Equal(web, easSeq)
		fmt.Fprintf(w, "demo: %s sequences equal: %t\n", field.name, equal)
		if !equal {
			fmt.Fprintln(w, "demo:   (the controllers evaluate at different moments of the sync period while the load ramps, and each then sees its own pods' rate; test/e2e compares decisions on identical metrics)")
		}
	}
}

// zeroWake is how a workload scaled to zero by its Autoscaler moved: the
// first time its Deployment's spec.replicas reached 0, the first time it
// was set above 0 again after that, and whether it went back to 0 later.
type zeroWake struct {
	Name              string
	ReachedZero, Woke bool
	ZeroAt, WokeAt    time.Duration // sample times
	BackToZero        bool
	PeakAfterWake     int32
}

// judgeZeroWake returns how name moved through zero over the samples; it
// reads spec.replicas, what the autoscaler wrote.
func judgeZeroWake(samples []sample, name string) zeroWake {
	z := zeroWake{Name: name}
	for _, s := range samples {
		ws, ok := s.W[name]
		if !ok || !ws.Seen {
			continue // its Deployment was not read
		}
		switch {
		case !z.ReachedZero:
			if ws.Spec == 0 {
				z.ReachedZero, z.ZeroAt = true, s.T
			}
		case !z.Woke:
			if ws.Spec > 0 {
				z.Woke, z.WokeAt, z.PeakAfterWake = true, s.T, ws.Spec
			}
		default:
			z.PeakAfterWake = max(z.PeakAfterWake, ws.Spec)
			if ws.Spec == 0 {
				z.BackToZero = true
			}
		}
	}
	return z
}

func (z zeroWake) String() string {
	if !z.ReachedZero {
		return fmt.Sprintf("%-11s never went to zero", z.Name)
	}
	if !z.Woke {
		return fmt.Sprintf("%-11s went to zero at %v and never woke", z.Name, fmtDur(z.ZeroAt))
	}
	return fmt.Sprintf("%-11s went to zero at %v, woke at %v (up to %d), back to zero: %t",
		z.Name, fmtDur(z.ZeroAt), fmtDur(z.WokeAt), z.PeakAfterWake, z.BackToZero)
}

// err is nil when the workload went to zero and woke.
func (z zeroWake) err() error {
	if z.ReachedZero && z.Woke {
		return nil
	}
	return fmt.Errorf("%s did not go to zero and wake: %v", z.Name, z)
}
