// Package adjust holds the extensions of ebbflow-autoscaler that act after the
// upstream-equal decision: pure functions of the decision, the spec and the
// clock that may change the replica count or hold back the scale write.
//
// Apply runs them in a fixed, documented order:
//
//  1. Paused: a paused autoscaler decides as usual but writes nothing.
//  2. DryRun: the decision is recorded and announced but never written.
//
// With no extension set, Apply is the identity: the decision's replicas are
// written exactly when the decision says so, and nothing else is added.
//
// Adjust never reads or writes the API; the controller applies its Result
// (the write, conditions, events and the steps of the decision record).
package adjust
