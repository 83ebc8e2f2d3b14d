// Package adjust holds the extensions of ebbflow-autoscaler that act after the
// upstream-equal decision: pure functions of the decision, the spec and the
// clock that may change the replica count or hold back the scale write.
//
// Two kinds, in a fixed, documented order. Proposal's extensions act on the
// metrics' combined proposal, before stabilization, the scaling policies and
// the bounds (decision.Input.Override), so that their result is paced like any
// other proposal:
//
//  1. Fallback: a metric failed or stale for fallback.after replaces the
//     proposal by the policy's (Hold, Replicas, AtLeast).
//  2. Activation: scale to zero and back with activation thresholds.
//
// Apply's extensions act on the final count and only hold back the write:
//
//  3. Paused: a paused autoscaler decides as usual but writes nothing.
//  4. DryRun: the decision is recorded and announced but never written.
//
// With no extension set, both are the identity: Proposal returns no override,
// the decision's replicas are written exactly when the decision says so, and
// nothing else is added.
//
// Adjust never reads or writes the API; the controller applies its Result
// (the write, conditions, events and the steps of the decision record).
package adjust
