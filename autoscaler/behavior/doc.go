// Package behavior turns the replica count the metrics propose into the count
// to apply, with the rules of kube-controller-manager v1.37's
// HorizontalPodAutoscaler: stabilization windows over a history of
// recommendations, scaling policies over a record of past scale events, and
// the [minReplicas, maxReplicas] bounds, reporting the AbleToScale and
// ScalingLimited conditions upstream would set.
//
// All functions are pure. Time is an input (Request.Now). Histories are taken
// and returned as new slices; inputs are never modified, so callers decide
// where state lives and when it is committed (upstream commits the
// recommendation on every normalization and the scale event only after a
// successful rescale: see RecordScaleEvent).
package behavior
