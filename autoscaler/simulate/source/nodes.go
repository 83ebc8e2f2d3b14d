package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/ebbflow/ebbflow/autoscaler/proportional"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// ErrNoNodeHistory: Prometheus holds no kube-state-metrics node series over
// the range.
var ErrNoNodeHistory = errors.New("no node-count history: Prometheus has no kube-state-metrics node series (kube_node_info) over the range")

// Node-count queries of kube-state-metrics' series, counted as the
// controller's node informer counts: cores are the allocatable cpu, and a
// node is schedulable when it is not cordoned and Ready.
const (
	nodesQuery            = `count(kube_node_info)`
	coresQuery            = `ceil(sum(kube_node_status_allocatable{resource="cpu"}))`
	schedulable           = `(kube_node_spec_unschedulable == 0) and on(node) (kube_node_status_condition{condition="Ready",status="true"} == 1)`
	schedulableNodesQuery = `count(` + schedulable + `)`
	schedulableCoresQuery = `ceil(sum(kube_node_status_allocatable{resource="cpu"} and on(node) ` + schedulable + `))`
)

// ClusterSizes reads the cluster's size at every step from
// kube-state-metrics' node series (the default backend), for replaying
// ClusterProportional metrics; a step without a node count has Nodes -1.
// It returns ErrNoNodeHistory when there is no node count at all.
func (r *Reader) ClusterSizes(ctx context.Context) ([]proportional.ClusterSize, error) {
	var cols [4][]int64
	for i, q := range []string{nodesQuery, coresQuery, schedulableNodesQuery, schedulableCoresQuery} {
		v, err := r.Replicas(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("node-count history: %w", err)
		}
		cols[i] = v
	}
	out := make([]proportional.ClusterSize, len(cols[0]))
	found := false
	for i := range out {
		if cols[0][i] == simulate.Missing {
			out[i].Nodes = -1
			continue
		}
		found = true
		out[i] = proportional.ClusterSize{Nodes: int(cols[0][i]), Cores: value(cols[1][i]),
			SchedulableNodes: value(cols[2][i]), SchedulableCores: value(cols[3][i])}
	}
	if !found {
		return nil, ErrNoNodeHistory
	}
	return out, nil
}

// value is a count, 0 when missing (no schedulable node at all).
func value(v int64) int {
	if v == simulate.Missing {
		return 0
	}
	return int(v)
}
