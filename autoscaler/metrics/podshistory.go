package metrics

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// The reserved requirements naming the workload whose pods a Pods metric's
// history sums (docs/forecast.md#history-contract), by the shape of the
// names its controller gives them; the adapter
// (adapter/rules.HistoryDeploymentPodsLabel) defines the same names.
const (
	// HistoryDeploymentPodsLabel: NAME-<pod-template-hash>-<5 characters>,
	// the pods of the ReplicaSets a Deployment (or a workload naming them
	// alike) owns.
	HistoryDeploymentPodsLabel = historyPrefix + "deployment-pods"
	// HistoryStatefulSetPodsLabel: NAME-<ordinal>.
	HistoryStatefulSetPodsLabel = historyPrefix + "statefulset-pods"
	// HistoryReplicaSetPodsLabel: NAME-<5 characters>.
	HistoryReplicaSetPodsLabel = historyPrefix + "replicaset-pods"
)

// WorkloadPods names the pods of a workload whatever their names today:
// Key is one of the History*PodsLabel requirements, Name the workload's.
type WorkloadPods struct {
	Key  string
	Name string
}

// PodsHistoryReader reads the history of a Pods metric through
// custom.metrics.k8s.io (docs/forecast.md#history-contract).
type PodsHistoryReader interface {
	// PodsHistory reads the history of metric over the pods of workload in
	// namespace, past pods included: the workload's total per timestamp
	// (the per-pod values summed) on a regular grid, NaN where nothing was
	// recorded. podSelector is the scale's pod selector, as for the current
	// value; selector the metric's.
	PodsHistory(ctx context.Context, namespace, metric string, workload WorkloadPods, podSelector, selector labels.Selector, req HistoryRequest) (forecast.Series, error)
}

var (
	_ PodsHistoryReader = (*REST)(nil)
	_ PodsHistoryReader = (*Deduplicated)(nil)
)

// PodsHistorySelector is HistorySelector with the requirement naming the
// workload.
func PodsHistorySelector(selector labels.Selector, workload WorkloadPods, req HistoryRequest) (labels.Selector, error) {
	switch workload.Key {
	case HistoryDeploymentPodsLabel, HistoryStatefulSetPodsLabel, HistoryReplicaSetPodsLabel:
	default:
		return nil, fmt.Errorf("%q does not name a workload's pods", workload.Key)
	}
	if workload.Name == "" {
		return nil, errors.New("a workload's pods need the workload's name")
	}
	sel, err := HistorySelector(selector, req)
	if err != nil {
		return nil, err
	}
	r, err := labels.NewRequirement(workload.Key, selection.Equals, []string{workload.Name})
	if err != nil {
		return nil, fmt.Errorf("workload %q cannot be asked for: %w", workload.Name, err)
	}
	return sel.Add(*r), nil
}

// PodsHistory implements PodsHistoryReader: GET
// /apis/custom.metrics.k8s.io/…/namespaces/NS/pods/*/METRIC with the pod
// selector as labelSelector and the metric selector, the reserved
// requirements and the workload as metricLabelSelector.
func (c *REST) PodsHistory(ctx context.Context, namespace, metric string, workload WorkloadPods, podSelector, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	sel, err := PodsHistorySelector(selector, workload, req)
	if err != nil {
		return forecast.Series{}, err
	}
	if podSelector == nil {
		podSelector = labels.Everything()
	}
	list, err := c.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, podSelector, metric, sel)
	if err != nil {
		return forecast.Series{}, fmt.Errorf("unable to fetch the history from custom metrics API: %w", err)
	}
	pts := make([]point, 0, len(list.Items))
	for _, m := range list.Items {
		pts = append(pts, point{at: m.Timestamp.Time, milli: m.Value.MilliValue()})
	}
	return grid(pts, req.Step)
}

// PodsHistory implements PodsHistoryReader: histories are not shared (the
// controller caches them), so the call goes to the wrapped client.
func (d *Deduplicated) PodsHistory(ctx context.Context, namespace, metric string, workload WorkloadPods, podSelector, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	h, ok := d.next.(PodsHistoryReader)
	if !ok {
		return forecast.Series{}, errors.New("the metrics client cannot read Pods histories")
	}
	return h.PodsHistory(ctx, namespace, metric, workload, podSelector, selector, req)
}
