package controller

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// SelfMetrics are the controller's own Prometheus metrics.
type SelfMetrics struct {
	reconcileDuration *prometheus.HistogramVec
	lag               prometheus.Histogram
	fetchErrors       *prometheus.CounterVec
	decisions         *prometheus.CounterVec
	outcomes          *prometheus.CounterVec
	writes            *prometheus.CounterVec
	fallbacks         *prometheus.GaugeVec
	floors            *prometheus.GaugeVec
	current, desired  *prometheus.GaugeVec
	forecasts         forecastGauges
	inFlight          prometheus.Gauge
	fencedEvals       prometheus.Counter
	history           *historyMetrics // history.go
}

// NewSelfMetrics creates the metrics and registers them with reg.
func NewSelfMetrics(reg prometheus.Registerer) (*SelfMetrics, error) {
	m := &SelfMetrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "reconcile_duration_seconds",
			Help:      "Time one evaluation of an autoscaler took, by kind and result (success, error).",
			Buckets:   prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"kind", "result"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "evaluation_lag_seconds",
			Help:      "Time between when an autoscaler was due for evaluation and when a worker started it.",
			Buckets:   prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "metric_fetch_errors_total",
			Help:      "Failed metric reads, by metric source type (Resource, ContainerResource, Pods, Object, External).",
		}, []string{"type"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "scale_decisions_total",
			Help:      "Evaluations by outcome: up, down (scale written), none (no change), failed (no decision possible).",
		}, []string{"direction"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "decisions_total",
			Help:      "Evaluations by the outcome of their decision record: ScaledUp, ScaledDown, Unchanged, WouldScale (paused or dry run), Failed.",
		}, []string{"outcome"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "api_writes_total",
			Help:      "Writes of the autoscaler objects by the controller: status (status subresource, with the decision record for Autoscalers), annotations (one patch of the last-decision and, after a rescale, scale-events annotations of drop-in HPAs).",
		}, []string{"kind"}),
		fallbacks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "fallback_active",
			Help:      "1 while an autoscaler's fallback applies (a metric failed or stale for fallback.after), else 0; by kind, namespace and name.",
		}, []string{"kind", "namespace", "name"}),
		floors: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "schedule_floor_replicas",
			Help:      "The floor an autoscaler's spec.schedules hold (0: no schedule active); only autoscalers with schedules; by kind, namespace and name.",
		}, []string{"kind", "namespace", "name"}),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "current_replicas",
			Help:      "The replicas of an autoscaler's target at its last evaluation (status.currentReplicas); absent while the target's scale cannot be read; by kind, namespace and name.",
		}, []string{"kind", "namespace", "name"}),
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "desired_replicas",
			Help:      "The replicas an autoscaler's last evaluation decided (status.desiredReplicas); absent while the target's scale cannot be read; by kind, namespace and name.",
		}, []string{"kind", "namespace", "name"}),
		forecasts: forecastGauges{
			replicas: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: "ebbflow_autoscaler",
				Name:      "forecast_replicas",
				Help:      "The replicas a metric's forecast asks for at the last evaluation (the floor it sets under the proposal); only metrics with a usable forecast; by kind, namespace, name and metric.",
			}, []string{"kind", "namespace", "name", "metric"}),
			values: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: "ebbflow_autoscaler",
				Name:      "forecast_value",
				Help:      "A metric's forecast value (in the metric's unit, forecast.lead ahead) at the last evaluation; only metrics with a usable forecast; by kind, namespace, name and metric.",
			}, []string{"kind", "namespace", "name", "metric"}),
			applied: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: "ebbflow_autoscaler",
				Name:      "forecast_applied",
				Help:      "1 when a metric's forecast floor applies at the last evaluation (mode Always, or Auto with a backtest that paid off), 0 when it is only reported; only metrics with a usable forecast; by kind, namespace, name and metric.",
			}, []string{"kind", "namespace", "name", "metric"}),
			shortRatio: prometheus.NewGaugeVec(prometheus.GaugeOpts{
				Namespace: "ebbflow_autoscaler",
				Name:      "forecast_backtest_short_ratio",
				Help:      "The forecast's backtest over the last days: the floor's shortfall over that of the metric's target alone lowered to the same replica-hours (below 0.9 with at most 5 % extra replica-hours: paid off); absent without a backtest or a shortfall; by kind, namespace, name and metric.",
			}, []string{"kind", "namespace", "name", "metric"}),
			set: map[string][]string{},
		},
		fencedEvals: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "fenced_evaluations_total",
			Help:      "Evaluations skipped because the leader election Lease was not renewed recently enough to be sure it is still held (a frozen or partitioned leader).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ebbflow_autoscaler",
			Name:      "metric_reads_in_flight",
			Help:      "Metric reads in flight over all workers (bounded by --max-concurrent-metric-reads).",
		}),
	}
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.lag, m.fetchErrors, m.decisions, m.outcomes, m.writes, m.fallbacks, m.floors, m.current, m.desired,
		m.forecasts.replicas, m.forecasts.values, m.forecasts.applied, m.forecasts.shortRatio, m.fencedEvals, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var err error
	m.history, err = newHistoryMetrics(reg)
	return m, err
}

// The methods accept a nil receiver so that tests may leave metrics out.

func (m *SelfMetrics) observeReconcile(kind string, d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	m.reconcileDuration.WithLabelValues(kind, result).Observe(d.Seconds())
}

func (m *SelfMetrics) observeLag(d time.Duration) {
	if m == nil {
		return
	}
	m.lag.Observe(max(d, 0).Seconds())
}

func (m *SelfMetrics) fetchError(sourceType string) {
	if m == nil {
		return
	}
	m.fetchErrors.WithLabelValues(sourceType).Inc()
}

func (m *SelfMetrics) readsInFlight(delta float64) {
	if m == nil {
		return
	}
	m.inFlight.Add(delta)
}

func (m *SelfMetrics) decision(direction string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(direction).Inc()
}

func (m *SelfMetrics) outcome(o string) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(o).Inc()
}

func (m *SelfMetrics) apiWrite(kind string) {
	if m == nil {
		return
	}
	m.writes.WithLabelValues(kind).Inc()
}

func (m *SelfMetrics) fenced() {
	if m == nil {
		return
	}
	m.fencedEvals.Inc()
}

// fallback sets the fallback gauge of the object behind key.
func (m *SelfMetrics) fallback(key string, active bool) {
	if m == nil {
		return
	}
	kind, namespace, name, err := splitKey(key)
	if err != nil {
		return
	}
	v := 0.0
	if active {
		v = 1
	}
	m.fallbacks.WithLabelValues(kind, namespace, name).Set(v)
}

// scheduleFloor sets the schedule floor gauge of the object behind key, or
// drops it when the object has no schedules.
func (m *SelfMetrics) scheduleFloor(key string, has bool, floor int32) {
	if m == nil {
		return
	}
	kind, namespace, name, err := splitKey(key)
	if err != nil {
		return
	}
	if !has {
		m.floors.DeleteLabelValues(kind, namespace, name)
		return
	}
	m.floors.WithLabelValues(kind, namespace, name).Set(float64(floor))
}

// forget drops the per-object series of the object behind key.
func (m *SelfMetrics) forget(key string) {
	if m == nil {
		return
	}
	if kind, namespace, name, err := splitKey(key); err == nil {
		m.fallbacks.DeleteLabelValues(kind, namespace, name)
		m.floors.DeleteLabelValues(kind, namespace, name)
		m.current.DeleteLabelValues(kind, namespace, name)
		m.desired.DeleteLabelValues(kind, namespace, name)
		m.forecasts.update(key, kind, namespace, name, nil)
	}
}

// replicas sets the replica gauges of the object behind key, or drops them
// when its scale was not read (read false).
func (m *SelfMetrics) replicas(key string, read bool, current, desired int32) {
	if m == nil {
		return
	}
	kind, namespace, name, err := splitKey(key)
	if err != nil {
		return
	}
	if !read {
		m.current.DeleteLabelValues(kind, namespace, name)
		m.desired.DeleteLabelValues(kind, namespace, name)
		return
	}
	m.current.WithLabelValues(kind, namespace, name).Set(float64(current))
	m.desired.WithLabelValues(kind, namespace, name).Set(float64(desired))
}

// forecast sets the forecast gauges of the object behind key to fs and
// drops its series of metrics no longer forecast.
func (m *SelfMetrics) forecast(key string, fs []evaluation.ForecastFigure) {
	if m == nil {
		return
	}
	if kind, namespace, name, err := splitKey(key); err == nil {
		m.forecasts.update(key, kind, namespace, name, fs)
	}
}

// forecastGauges are the per-metric forecast gauges, with the metric labels
// each object has series for, so that a forecast that goes away (spec
// changed, no history) loses its series. Series are bounded by the
// autoscalers' forecast metrics.
type forecastGauges struct {
	replicas, values, applied, shortRatio *prometheus.GaugeVec

	mu  sync.Mutex
	set map[string][]string // key → metric labels with series
}

// update makes key's series those of fs (none when fs is empty). Two
// forecasts of one metric name show the one that asks for more replicas.
func (g *forecastGauges) update(key, kind, namespace, name string, fs []evaluation.ForecastFigure) {
	best := map[string]evaluation.ForecastFigure{}
	for _, f := range fs {
		if b, ok := best[f.Metric]; !ok || f.Replicas > b.Replicas {
			best[f.Metric] = f
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, metric := range g.set[key] {
		if _, ok := best[metric]; !ok {
			g.replicas.DeleteLabelValues(kind, namespace, name, metric)
			g.values.DeleteLabelValues(kind, namespace, name, metric)
			g.applied.DeleteLabelValues(kind, namespace, name, metric)
			g.shortRatio.DeleteLabelValues(kind, namespace, name, metric)
		}
	}
	if len(best) == 0 {
		delete(g.set, key)
		return
	}
	metrics := make([]string, 0, len(best))
	for metric, f := range best {
		g.replicas.WithLabelValues(kind, namespace, name, metric).Set(float64(f.Replicas))
		g.values.WithLabelValues(kind, namespace, name, metric).Set(f.Value)
		applied := 0.0
		if f.Applied {
			applied = 1
		}
		g.applied.WithLabelValues(kind, namespace, name, metric).Set(applied)
		if math.IsNaN(f.ShortRatio) {
			g.shortRatio.DeleteLabelValues(kind, namespace, name, metric)
		} else {
			g.shortRatio.WithLabelValues(kind, namespace, name, metric).Set(f.ShortRatio)
		}
		metrics = append(metrics, metric)
	}
	slices.Sort(metrics)
	g.set[key] = metrics
}
