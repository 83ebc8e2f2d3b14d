package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// How the controller reads the histories forecasts need
// (docs/forecast.md#history-contract).
const (
	// HistoryRefresh is how often a metric's history is read again
	// (evaluation.HistoryRefresh): the forecast reads past seasons, and the
	// metric's current value, read at every evaluation, keeps its recent
	// level current.
	HistoryRefresh = evaluation.HistoryRefresh
	// HistoryRetry is how soon a failed read is tried again.
	HistoryRetry = time.Minute
	// HistoryMaxAge is how long the last good history is used while reads
	// fail; older, the metric has no forecast and decides reactively.
	HistoryMaxAge = 30 * time.Minute
	// HistoryFullRead is how often a history is read whole; the refreshes
	// in between read only the points since the last read and
	// historyOverlap before them, and merge them in (forecast.Series.Merge):
	// the whole read costs the controller and the adapter ~30 ms a history
	// of 10,000 points (docs/benchmarks.md, the self-check's cost).
	HistoryFullRead = time.Hour
	// historyOverlap is how far before a history's last point a refresh
	// reads again: samples that arrived late replace what was read.
	historyOverlap = 10 * time.Minute
	// maxHistories bounds the cache; entries unused for HistoryMaxAge go
	// first.
	maxHistories = 4096
)

// historyRequestFor is the history a forecast reads: its backtest's span,
// the past seasons before it and an hour more (o.HistoryRange), at
// o.HistoryStep().
func historyRequestFor(o evaluation.ForecastOptions) metrics.HistoryRequest {
	return metrics.HistoryRequest{Range: o.HistoryRange(), Step: o.HistoryStep()}
}

// historyCache holds the histories read, per autoscaler and metric. The
// zero value is ready to use.
type historyCache struct {
	mu      sync.Mutex
	entries map[string]*historyEntry
}

type historyEntry struct {
	good   *forecast.Series
	goodAt time.Time
	// fullAt is the last whole read of good.
	fullAt time.Time
	// triedAt is the last read; err its failure (nil when it succeeded).
	triedAt time.Time
	err     error
	usedAt  time.Time
}

// errHistoryUnread is why a metric of another type has no history.
var errHistoryUnread = errors.New("the controller reads histories of Pods, Object and External metrics only")

// readHistories fills the Series of every reading whose metric has a
// forecast, from the cache or the metrics APIs: an External metric's
// history through external.metrics.k8s.io, an Object metric's (the
// described object's) and a Pods metric's (the total of the scale target's
// pods, past pods included, named by workloadOf; podSel is the scale's pod
// selector) through custom.metrics.k8s.io. A failed read keeps the
// last good history for HistoryMaxAge; without one, SeriesErr says why and
// the metric decides reactively (a forecast only ever raises the proposal).
func (c *Controller) readHistories(ctx context.Context, key string, obj *Object, readings []evaluation.Reading, podSel labels.Selector) {
	for i := range readings {
		if i >= len(obj.Spec.MetricOptions) || obj.Spec.MetricOptions[i].Forecast == nil {
			continue
		}
		r := &readings[i]
		req := historyRequestFor(*obj.Spec.MetricOptions[i].Forecast)
		ns := obj.Namespace
		switch {
		case r.Spec.Type == autoscalingv2.ExternalMetricSourceType && r.Spec.External != nil:
			m := r.Spec.External.Metric
			r.Series, r.SeriesErr = c.history(ctx, key, i, "External", m, req, func(sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
				hr, ok := c.deps.Metrics.(metrics.HistoryReader)
				if !ok {
					return forecast.Series{}, fmt.Errorf("the metrics client %T cannot read histories", c.deps.Metrics)
				}
				return hr.ExternalHistory(ctx, ns, m.Name, sel, req)
			})
		case r.Spec.Type == autoscalingv2.ObjectMetricSourceType && r.Spec.Object != nil:
			m, ref := r.Spec.Object.Metric, r.Spec.Object.DescribedObject
			r.Series, r.SeriesErr = c.history(ctx, key, i, "Object\x00"+ref.APIVersion+"\x00"+ref.Kind+"\x00"+ref.Name, m, req, func(sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
				hr, ok := c.deps.Metrics.(metrics.ObjectHistoryReader)
				if !ok {
					return forecast.Series{}, fmt.Errorf("the metrics client %T cannot read object histories", c.deps.Metrics)
				}
				return hr.ObjectHistory(ctx, ns, m.Name, ref, sel, req)
			})
		case r.Spec.Type == autoscalingv2.PodsMetricSourceType && r.Spec.Pods != nil:
			m := r.Spec.Pods.Metric
			w, err := c.workloadPods(obj, podSel)
			if err != nil {
				r.SeriesErr = err
				continue
			}
			r.Series, r.SeriesErr = c.history(ctx, key, i, "Pods\x00"+w.Key+"\x00"+w.Name, m, req, func(sel labels.Selector, req metrics.HistoryRequest) (forecast.Series, error) {
				hr, ok := c.deps.Metrics.(metrics.PodsHistoryReader)
				if !ok {
					return forecast.Series{}, fmt.Errorf("the metrics client %T cannot read Pods histories", c.deps.Metrics)
				}
				return hr.PodsHistory(ctx, ns, m.Name, w, podSel, sel, req)
			})
		default:
			r.SeriesErr = errHistoryUnread
		}
	}
}

// history is metric i's history from the cache, read again when due with
// read (whole, or its last minutes: readDue). source names where it is
// read from (the cache key's part besides the metric).
func (c *Controller) history(ctx context.Context, key string, i int, source string, m autoscalingv2.MetricIdentifier, req metrics.HistoryRequest, read func(labels.Selector, metrics.HistoryRequest) (forecast.Series, error)) (*forecast.Series, error) {
	// A metric without a selector reads every series (as its current value
	// does); LabelSelectorAsSelector would make it a selector of nothing,
	// which cannot carry the history requirements.
	sel := labels.Everything()
	if m.Selector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(m.Selector); err != nil {
			return nil, fmt.Errorf("history not read: %w", err)
		}
	}
	hkey := fmt.Sprintf("%s\x00%d\x00%s\x00%s\x00%s\x00%v\x00%v", key, i, source, m.Name, sel, req.Range, req.Step)
	now := c.deps.Clock.Now()
	e := c.histories.entry(hkey, now)
	due := e.triedAt.IsZero() || now.Sub(e.triedAt) >= HistoryRefresh || (e.err != nil && now.Sub(e.triedAt) >= HistoryRetry)
	if due {
		e.triedAt, e.err = now, nil
		if err := c.readDue(e, now, req, func(req metrics.HistoryRequest) (forecast.Series, error) { return read(sel, req) }); err != nil {
			e.err = err
			klog.FromContext(ctx).V(2).Info("Reading a forecast's history failed", "metric", m.Name, "err", err)
		}
	}
	switch {
	case e.good != nil && now.Sub(e.goodAt) <= HistoryMaxAge:
		return e.good, nil
	case e.err != nil:
		return nil, fmt.Errorf("reading its history failed: %w", e.err)
	case e.good != nil:
		return nil, fmt.Errorf("its history is older than %v", HistoryMaxAge)
	}
	return nil, evaluation.ErrNoHistory
}

// readDue reads e's history again: only its points since the last read
// (and historyOverlap before them) merged into e.good while a whole read
// is less than HistoryFullRead old, else whole. A partial read that fails
// or does not join e.good is followed by a whole one.
func (c *Controller) readDue(e *historyEntry, now time.Time, req metrics.HistoryRequest, read func(metrics.HistoryRequest) (forecast.Series, error)) error {
	if g := e.good; g != nil && g.Step == req.Step && len(g.Values) > 0 && now.Sub(e.fullAt) < HistoryFullRead {
		end := g.Start.Add(time.Duration(len(g.Values)-1) * g.Step)
		since := (now.Sub(end) + historyOverlap + req.Step - 1) / req.Step * req.Step
		if since < req.Range {
			h, err := read(metrics.HistoryRequest{Range: since, Step: req.Step})
			c.deps.SelfMetrics.historyRead(err)
			if err == nil {
				if merged, ok := g.Merge(h, req.Range); ok {
					e.good, e.goodAt = &merged, now
					return nil
				}
			}
		}
	}
	h, err := read(req)
	c.deps.SelfMetrics.historyRead(err)
	if err != nil {
		return err
	}
	e.good, e.goodAt, e.fullAt = &h, now, now
	return nil
}

// entry is the cache entry of hkey, created when missing; the cache drops
// entries unused for HistoryMaxAge when full. The entry is only used by the
// worker evaluating its autoscaler.
func (hc *historyCache) entry(hkey string, now time.Time) *historyEntry {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.entries == nil {
		hc.entries = map[string]*historyEntry{}
	}
	e, ok := hc.entries[hkey]
	if !ok {
		if len(hc.entries) >= maxHistories {
			for k, old := range hc.entries {
				if now.Sub(old.usedAt) > HistoryMaxAge {
					delete(hc.entries, k)
				}
			}
		}
		e = &historyEntry{}
		if len(hc.entries) < maxHistories {
			hc.entries[hkey] = e
		}
	}
	e.usedAt = now
	return e
}

// forget drops the histories of the autoscaler behind key.
func (hc *historyCache) forget(key string) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for k := range hc.entries {
		if strings.HasPrefix(k, key+"\x00") {
			delete(hc.entries, k)
		}
	}
}

// historyMetrics count history reads.
type historyMetrics struct {
	reads *prometheus.CounterVec
}

func newHistoryMetrics(reg prometheus.Registerer) (*historyMetrics, error) {
	m := &historyMetrics{reads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ebbflow_autoscaler",
		Name:      "history_reads_total",
		Help:      "Reads of a forecast metric's history through the external or custom metrics API, by result (success, failure).",
	}, []string{"result"})}
	return m, reg.Register(m.reads)
}

func (m *SelfMetrics) historyRead(err error) {
	if m == nil || m.history == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.history.reads.WithLabelValues(result).Inc()
}
