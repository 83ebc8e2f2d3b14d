// Package fake holds a MetricsGetter answering from fixed values, for tests.
package fake

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/metrics/pkg/apis/metrics"
)

// Getter answers from Pods (by "namespace/name") and Nodes (by name), or with
// Err; objects without an entry are left out. It records how many objects each
// call asked about. Safe for concurrent use once filled.
type Getter struct {
	Pods  map[string]metrics.PodMetrics
	Nodes map[string]metrics.NodeMetrics
	Err   error

	mu    sync.Mutex
	asked []int
}

// PodMetrics returns the entries of pods that Pods has, in reverse order (so
// a caller's sorting is seen), or Err.
func (g *Getter) PodMetrics(_ context.Context, pods []*metav1.PartialObjectMetadata) ([]metrics.PodMetrics, error) {
	g.record(len(pods))
	if g.Err != nil {
		return nil, g.Err
	}
	var out []metrics.PodMetrics
	for i := len(pods) - 1; i >= 0; i-- {
		if m, ok := g.Pods[pods[i].Namespace+"/"+pods[i].Name]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// NodeMetrics is PodMetrics for nodes.
func (g *Getter) NodeMetrics(_ context.Context, nodes []*corev1.Node) ([]metrics.NodeMetrics, error) {
	g.record(len(nodes))
	if g.Err != nil {
		return nil, g.Err
	}
	var out []metrics.NodeMetrics
	for i := len(nodes) - 1; i >= 0; i-- {
		if m, ok := g.Nodes[nodes[i].Name]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// Asked returns the number of objects each call asked about, in call order.
func (g *Getter) Asked() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.asked...)
}

func (g *Getter) record(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked = append(g.asked, n)
}
