// Package decision combines per-metric proposals into one replica decision,
// with the rules of kube-controller-manager v1.37's HorizontalPodAutoscaler
// reconcile: the bounds checked before any metric is read (a target at zero
// replicas, above max or below min), the maximum over metrics with its
// failure rules, normalization (package behavior), the floor applied when
// scaling from zero, and the condition texts upstream reports.
//
// Everything here is pure: the caller reads metrics (package replicas turns
// them into proposals), writes the scale and status, and records events.
package decision
