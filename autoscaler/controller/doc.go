// Package controller reconciles autoscalers: for each object it reads the
// scale target's /scale subresource, asks package metrics for the values its
// metrics need, lets the pure packages replicas, behavior and decision decide,
// then writes the scale, the status and events as kube-controller-manager
// v1.37's HorizontalPodAutoscaler controller does.
//
// The objects come from Backends: one for autoscaling/v2
// HorizontalPodAutoscalers (drop-in mode) and one per further kind whose spec
// and status are field for field the HPA's. Each object is evaluated once per
// sync period; its recommendation history and scale events live in memory,
// keyed by kind and name, and are dropped when it is deleted.
package controller
