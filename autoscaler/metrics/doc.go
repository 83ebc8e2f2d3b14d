// Package metrics reads the values an autoscaler's metrics need through the
// standard metrics APIs — metrics.k8s.io (resource), custom.metrics.k8s.io
// (pods and object metrics) and external.metrics.k8s.io — with the clients of
// k8s.io/metrics, and returns them as plain values in the shapes package
// replicas takes (milli-units, pod name → sample).
//
// NewREST talks to the APIs. NewDeduplicated wraps any Client so that
// identical questions asked by several autoscalers within a short window are
// sent once; WithMaxAge shortens the window for one read (an autoscaler's own
// sync period). HistoryReader reads an external metric's history for a
// forecast through the same API (docs/forecast.md#history-contract). Package
// fake holds an in-memory Client for tests.
package metrics
