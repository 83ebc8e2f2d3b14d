package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// The reserved requirements of the history contract between the autoscaler
// and the adapter (docs/forecast.md#history-contract): the same external
// metric asked with the metric's own selector plus these two requirements is
// answered with one item per recorded sample, each with its timestamp. The
// adapter (adapter/rules.HistoryRangeLabel) defines the same names.
const (
	HistoryRangeLabel = "history.ebbflow.dev/range"
	HistoryStepLabel  = "history.ebbflow.dev/step"
	historyPrefix     = "history.ebbflow.dev/"
)

// MaxHistoryPoints bounds the grid of one history: the adapter's bound on
// points per series (range/step + 1).
const MaxHistoryPoints = 11_000

// HistoryRequest is how much history to read: the last Range, one point
// per Step.
type HistoryRequest struct {
	Range time.Duration
	Step  time.Duration
}

// HistoryReader reads a metric's recorded values through the standard
// metrics APIs (no PromQL: the adapter renders the query).
type HistoryReader interface {
	// ExternalHistory reads the history of an external metric: for each
	// timestamp the sum of the values of the series matching selector (as
	// the external metric's current value sums them), on a regular grid
	// with NaN where nothing was recorded.
	ExternalHistory(ctx context.Context, namespace, metric string, selector labels.Selector, req HistoryRequest) (forecast.Series, error)
}

var (
	_ HistoryReader = (*REST)(nil)
	_ HistoryReader = (*Deduplicated)(nil)
)

// ErrNoHistory is an answer without any sample.
var ErrNoHistory = errors.New("no history returned from the metrics API")

// HistorySelector is selector with the reserved requirements asking for req.
// A selector that already uses a reserved key is an error.
func HistorySelector(selector labels.Selector, req HistoryRequest) (labels.Selector, error) {
	if req.Step <= 0 || req.Range < req.Step {
		return nil, fmt.Errorf("history of %v at a step of %v: the range must be at least one positive step", req.Range, req.Step)
	}
	if n := int64(req.Range/req.Step) + 1; n > MaxHistoryPoints {
		return nil, fmt.Errorf("history of %v at a step of %v is %d points, more than %d", req.Range, req.Step, n, MaxHistoryPoints)
	}
	if selector == nil {
		selector = labels.Everything()
	}
	reqs, selectable := selector.Requirements()
	if !selectable {
		// labels.Nothing(): requirements added to it are dropped, and the
		// request would silently ask for the current value.
		return nil, errors.New("a metric selector that selects nothing cannot ask for a history")
	}
	for _, r := range reqs {
		if len(r.Key()) >= len(historyPrefix) && r.Key()[:len(historyPrefix)] == historyPrefix {
			return nil, fmt.Errorf("metric selector key %q is reserved for histories", r.Key())
		}
	}
	out := selector.DeepCopySelector()
	for key, d := range map[string]time.Duration{HistoryRangeLabel: req.Range, HistoryStepLabel: req.Step} {
		r, err := labels.NewRequirement(key, selection.Equals, []string{model.Duration(d).String()})
		if err != nil {
			return nil, err
		}
		out = out.Add(*r)
	}
	return out, nil
}

// ExternalHistory implements HistoryReader.
func (c *REST) ExternalHistory(ctx context.Context, namespace, metric string, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	if err := ctx.Err(); err != nil {
		return forecast.Series{}, err
	}
	sel, err := HistorySelector(selector, req)
	if err != nil {
		return forecast.Series{}, err
	}
	list, err := c.external.NamespacedMetrics(namespace).List(metric, sel)
	if err != nil {
		return forecast.Series{}, fmt.Errorf("unable to fetch the history from external metrics API: %w", err)
	}
	pts := make([]point, 0, len(list.Items))
	for _, m := range list.Items {
		pts = append(pts, point{at: m.Timestamp.Time, milli: m.Value.MilliValue()})
	}
	return grid(pts, req.Step)
}

// ExternalHistory implements HistoryReader: histories are not shared (the
// controller caches them), so the call goes to the wrapped client.
func (d *Deduplicated) ExternalHistory(ctx context.Context, namespace, metric string, selector labels.Selector, req HistoryRequest) (forecast.Series, error) {
	h, ok := d.next.(HistoryReader)
	if !ok {
		return forecast.Series{}, fmt.Errorf("metrics client %T cannot read histories", d.next)
	}
	return h.ExternalHistory(ctx, namespace, metric, selector, req)
}

type point struct {
	at    time.Time
	milli int64
}

// grid sums the points per timestamp onto a regular grid from the earliest
// timestamp at step (a point between grid times goes to the nearest one),
// in the metric's unit, NaN where nothing was recorded. A grid of more than
// MaxHistoryPoints points is an error.
func grid(pts []point, step time.Duration) (forecast.Series, error) {
	if len(pts) == 0 {
		return forecast.Series{}, ErrNoHistory
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].at.Before(pts[j].at) })
	start, end := pts[0].at, pts[len(pts)-1].at
	n := int64(end.Sub(start)/step) + 1
	if n > MaxHistoryPoints || n < 0 {
		return forecast.Series{}, fmt.Errorf("history from %v to %v at a step of %v is more than %d points", start, end, step, MaxHistoryPoints)
	}
	sums := make([]int64, n)
	seen := make([]bool, n)
	for _, p := range pts {
		i := int64(math.Round(float64(p.at.Sub(start)) / float64(step)))
		if i >= n {
			i = n - 1
		}
		sums[i] += p.milli
		seen[i] = true
	}
	h := forecast.Series{Start: start, Step: step, Values: make([]float64, n)}
	for i := range sums {
		h.Values[i] = math.NaN()
		if seen[i] {
			h.Values[i] = float64(sums[i]) / 1000
		}
	}
	return h, nil
}
