// Package fakeapp is a fake application for the demo on kwok's fake nodes
// and the end-to-end tests: it publishes the metrics an application's pods
// would report, in a closed loop with their count, without running them.
// (autoscaler/simulate, by contrast, replays recorded metrics through the
// autoscaler's evaluation.)
//
// It watches the Ready pods of chosen Deployments and publishes, on a
// Prometheus exporter, what those pods would report if they served real
// traffic:
//
//   - request rate: http_requests_total{namespace,pod,service} counters whose
//     total rate follows a traffic Profile and is divided evenly among the Ready
//     pods, so adding pods lowers the per-pod rate;
//   - queue depth: a queue_messages_ready{queue} gauge that producers fill at a
//     Profile rate and every Ready worker pod drains at a fixed rate, so adding
//     workers drains the queue faster.
//
// Scaling a Deployment therefore changes what the fake app reports: the loop
// through Prometheus, the adapter and the HPA is closed. The arithmetic (profile
// evaluation, division among pods, queue step) lives in pure functions; the
// App only wires them to a pod watch, a clock and a metrics sink.
package fakeapp

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// Curve is a rate as a function of the time since the simulation started.
// Implementations must be safe for concurrent use.
type Curve interface {
	At(elapsed time.Duration) float64
}

var (
	_ Curve = Profile(nil)
	_ Curve = (*Setpoint)(nil)
)

// Segment is one piece of a Profile: over Duration the value moves linearly
// from From to To.
type Segment struct {
	Duration time.Duration
	From, To float64
}

// Profile is a piecewise-linear function of the time since the start, such as
// requests per second. Before the first segment it is the first segment's
// From; after the last segment it stays at the last segment's To. The zero
// Profile is 0 everywhere.
type Profile []Segment

// At returns the value of the profile at elapsed time d.
func (p Profile) At(d time.Duration) float64 {
	if len(p) == 0 {
		return 0
	}
	if d <= 0 {
		return p[0].From
	}
	for _, s := range p {
		if d < s.Duration {
			return s.From + (s.To-s.From)*float64(d)/float64(s.Duration)
		}
		d -= s.Duration
	}
	return p[len(p)-1].To
}

// Duration returns the sum of the segment durations.
func (p Profile) Duration() time.Duration {
	var total time.Duration
	for _, s := range p {
		total += s.Duration
	}
	return total
}

// Validate reports a negative duration or value, which no caller means.
func (p Profile) Validate() error {
	for i, s := range p {
		if s.Duration < 0 || s.From < 0 || s.To < 0 {
			return fmt.Errorf("profile segment %d: negative duration or value: %+v", i, s)
		}
	}
	return nil
}

// Constant returns a profile that is v at all times.
func Constant(v float64) Profile {
	return Profile{{Duration: 0, From: v, To: v}}
}

// Shape describes the usual demo traffic: Base until RampUp starts, a linear
// ramp to Peak, a plateau, a linear ramp back to Base, then Base for Tail.
type Shape struct {
	Base, Peak                            float64
	Lead, RampUp, Plateau, RampDown, Tail time.Duration
}

// Profile returns the piecewise-linear profile of the shape.
func (s Shape) Profile() Profile {
	return Profile{
		{Duration: s.Lead, From: s.Base, To: s.Base},
		{Duration: s.RampUp, From: s.Base, To: s.Peak},
		{Duration: s.Plateau, From: s.Peak, To: s.Peak},
		{Duration: s.RampDown, From: s.Peak, To: s.Base},
		{Duration: s.Tail, From: s.Base, To: s.Base},
	}
}

// Setpoint is a Curve whose value is set at run time, for tests that change
// the load when they observe something rather than at fixed times. The zero
// value is 0. It is safe for concurrent use.
type Setpoint struct{ bits atomic.Uint64 }

// NewSetpoint returns a Setpoint at v.
func NewSetpoint(v float64) *Setpoint {
	s := &Setpoint{}
	s.Set(v)
	return s
}

// Set changes the value; negative values count as 0.
func (s *Setpoint) Set(v float64) { s.bits.Store(math.Float64bits(max(v, 0))) }

// At returns the current value regardless of the time.
func (s *Setpoint) At(time.Duration) float64 { return math.Float64frombits(s.bits.Load()) }
