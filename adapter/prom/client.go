// Package prom is ebbflow-adapter's Prometheus client: instant queries, label values and
// streamed series discovery over the HTTP API, built on client_golang's api.Client.
//
// The adapter asks only three things of Prometheus, so the interface is small;
// MatrixQuerier adds range-vector instant queries for histories (matrix.go; the response caps with the HTTP client in http.go). All
// methods honour ctx cancellation and deadlines; the remaining time of ctx is sent to
// Prometheus as the query's `timeout` parameter.
package prom

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// Client is what the adapter needs from Prometheus. Implementations are safe for
// concurrent use.
type Client interface {
	// Query evaluates an instant query at Prometheus' current time and returns the
	// resulting vector. A result of another type is an error.
	Query(ctx context.Context, query string) (model.Vector, error)
	// LabelValues returns the values of label among series matching any of matches
	// seen since start.
	LabelValues(ctx context.Context, label string, matches []string, start time.Time) ([]string, error)
	// Series streams the series matching any of matches seen since start. fn is called
	// once per series with the metric name and the sorted names of its other labels;
	// labelNames is only valid during the call. An error from fn stops the stream and
	// is returned. Memory use does not grow with the number of series.
	Series(ctx context.Context, matches []string, start time.Time, fn func(name string, labelNames []string) error) error
}

// APIError is an error reported by Prometheus itself (as opposed to a transport error).
type APIError struct {
	// StatusCode is the HTTP status of the response.
	StatusCode int
	// Type is Prometheus' errorType, e.g. "bad_data", "timeout", "execution".
	Type string
	// Message is Prometheus' error text.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("prometheus %s error (status %d): %s", e.Type, e.StatusCode, e.Message)
}
