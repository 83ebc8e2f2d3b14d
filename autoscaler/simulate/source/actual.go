package source

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/ebbflow/ebbflow/autoscaler/simulate"
)

// ActualQuery is the kube-state-metrics query of the replicas a workload
// had, for the kinds kube-state-metrics knows; "" for other kinds.
func ActualQuery(kind, namespace, name string) string {
	var metric, label string
	switch kind {
	case "Deployment":
		metric, label = "kube_deployment_status_replicas", "deployment"
	case "StatefulSet":
		metric, label = "kube_statefulset_status_replicas", "statefulset"
	case "ReplicaSet":
		metric, label = "kube_replicaset_status_replicas", "replicaset"
	default:
		return ""
	}
	return fmt.Sprintf("%s{namespace=%s,%s=%s}", metric, strconv.Quote(namespace), label, strconv.Quote(name))
}

// Replicas reads a replica count over the range from the default backend:
// the first series query returns, rounded; simulate.Missing where it has no
// sample.
func (r *Reader) Replicas(ctx context.Context, query string) ([]int64, error) {
	out := make([]int64, r.opts.Range.Steps())
	for i := range out {
		out[i] = simulate.Missing
	}
	err := r.rangeQuery(ctx, "", query, func(series int, _ map[string]string, i int, v float64) {
		if series == 0 && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[i] = int64(math.Round(v))
		}
	})
	return out, err
}
