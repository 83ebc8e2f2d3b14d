// Package controller reconciles autoscalers: for each object it reads the
// scale target's /scale subresource, asks package metrics for the values its
// metrics need, lets the pure packages replicas, behavior and decision decide,
// then writes the scale, the status and events as kube-controller-manager
// v1.37's HorizontalPodAutoscaler controller does.
//
// The objects come from Backends (backend.go): HPABackend for autoscaling/v2
// HorizontalPodAutoscalers (drop-in mode) and AutoscalerBackend for
// autoscaling.ebbflow.dev Autoscalers, whose spec and status are field for
// field the HPA's. Queue keys are "<Kind>/<namespace>/<name>".
//
// Layout: controller.go (Controller, New, Run, workers, due times for the lag
// metric), handlers.go (informer events), reconcile.go (sync, one reconcile
// pass, status), inputs.go (selector checks, shared metric inputs),
// proposals.go and sources.go (one proposal and metric status per metric
// source), scale.go (scale read and write), conditions.go, state.go
// (per-object recommendation history and scale events), selectors.go
// (ambiguous selector detection), pods.go (pod label index),
// consistency.go (no reconcile from a cache older than the last write),
// selfmetrics.go (the controller's Prometheus metrics).
//
// Each object is evaluated once per sync period; its recommendation history
// and scale events live in memory and are dropped when it is deleted.
package controller
