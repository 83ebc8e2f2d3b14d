// Package pipeline holds the I/O-free parts of one evaluation of an
// autoscaler, shared by the controller (autoscaler/controller) and the replay
// of history (autoscaler/simulate): what an Autoscaler's spec means to the
// evaluation (Spec), the decide stage over an observation (Decide: one
// proposal per metric, the proposal extensions, decision.Decide), and the
// history an autoscaler carries from one evaluation to the next (History).
//
// Everything here is pure: values in, values out, time passed in.
package pipeline
