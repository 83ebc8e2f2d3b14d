// Package fake holds an in-memory metrics.Client for tests.
package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Client answers from maps keyed by metric name (resource name for
// PodResources) and counts calls. Set fields before use; Calls is safe to
// read concurrently with calls.
type Client struct {
	// Resources and Pods map a resource or metric name to samples, returned
	// regardless of namespace and selectors.
	Resources map[corev1.ResourceName]replicas.Samples
	Pods      map[string]replicas.Samples
	// Objects maps "Kind/name/metric" to a value.
	Objects map[string]int64
	// External maps a metric name to its series.
	External map[string][]int64
	// Err, when set, is returned by every call.
	Err error
	// Timestamp is returned with every answer.
	Timestamp time.Time
	// Delay, when set, is waited before answering.
	Delay time.Duration

	mu    sync.Mutex
	calls int
}

var _ metrics.Client = (*Client)(nil)

// Calls returns the number of calls made so far.
func (c *Client) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *Client) begin() error {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if c.Delay > 0 {
		time.Sleep(c.Delay)
	}
	return c.Err
}

// PodResources implements metrics.Client.
func (c *Client) PodResources(_ context.Context, _ string, _ labels.Selector, resource corev1.ResourceName, _ string) (replicas.Samples, time.Time, error) {
	if err := c.begin(); err != nil {
		return nil, time.Time{}, err
	}
	s, ok := c.Resources[resource]
	if !ok || len(s) == 0 {
		return nil, time.Time{}, metrics.ErrNoResourceMetrics
	}
	return s, c.Timestamp, nil
}

// PodMetric implements metrics.Client.
func (c *Client) PodMetric(_ context.Context, _, metric string, _, _ labels.Selector) (replicas.Samples, time.Time, error) {
	if err := c.begin(); err != nil {
		return nil, time.Time{}, err
	}
	s, ok := c.Pods[metric]
	if !ok || len(s) == 0 {
		return nil, time.Time{}, metrics.ErrNoCustomMetrics
	}
	return s, c.Timestamp, nil
}

// ObjectMetric implements metrics.Client.
func (c *Client) ObjectMetric(_ context.Context, _, metric string, ref autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	if err := c.begin(); err != nil {
		return 0, time.Time{}, err
	}
	v, ok := c.Objects[ref.Kind+"/"+ref.Name+"/"+metric]
	if !ok {
		return 0, time.Time{}, fmt.Errorf("metric %s not found for %s %s", metric, ref.Kind, ref.Name)
	}
	return v, c.Timestamp, nil
}

// ExternalMetric implements metrics.Client.
func (c *Client) ExternalMetric(_ context.Context, _, metric string, _ labels.Selector) ([]int64, time.Time, error) {
	if err := c.begin(); err != nil {
		return nil, time.Time{}, err
	}
	v := c.External[metric]
	if len(v) == 0 {
		return nil, time.Time{}, metrics.ErrNoExternalMetrics
	}
	return v, c.Timestamp, nil
}
