package evaluation

import (
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Defaults of a metric's forecast (v1alpha1.MetricForecast).
const (
	// DefaultForecastMethod is the method chosen on the replays of real
	// traffic (docs/benchmarks.md#forecasts-on-real-traffic).
	DefaultForecastMethod = forecast.LevelPeak
	// DefaultPodStartup is the pod start-up a forecast's default lead
	// covers; DefaultSyncPeriod the sync period added to it (upstream's
	// --horizontal-pod-autoscaler-sync-period default).
	DefaultPodStartup = 60 * time.Second
	DefaultSyncPeriod = 15 * time.Second
	// HistoryRefresh is how often ebbflow-autoscaler reads a forecast's
	// history again (and `ebbflow simulate`'s default): past seasons change
	// little in minutes, and between reads the metric's current value keeps
	// LevelCorrected's recent level current (latestOf).
	HistoryRefresh = 5 * time.Minute
	// BacktestRefresh is how often a forecast's backtest is computed again:
	// it scores days, which an hour changes little.
	BacktestRefresh = time.Hour
)

// StageForecast names the forecast's step in decision records;
// ConditionForecasting its condition.
const (
	StageForecast                                                           = "Forecast"
	ConditionForecasting autoscalingv2.HorizontalPodAutoscalerConditionType = "Forecasting"
)

// ErrNoHistory is why a metric read without its history has no forecast.
var ErrNoHistory = errors.New("no history was read for the forecast")

// ForecastOptions are a metric's forecast with its defaults applied.
type ForecastOptions struct {
	// Season is forecast.Daily or forecast.Weekly; SeasonName its name.
	Season     time.Duration
	SeasonName v1alpha1.ForecastSeason
	Method     forecast.Method
	Lead       time.Duration
	// Startup is the pods' start-up (the backtest's readiness delay).
	Startup time.Duration
	// Mode says when the floor applies (v1alpha1.ForecastAuto: while the
	// backtest shows it paid off).
	Mode v1alpha1.ForecastMode
}

// BacktestSpan is how far back a forecast is backtested: the last 3 days
// of a daily season, the last week of a weekly one.
func (o ForecastOptions) BacktestSpan() time.Duration {
	if o.Season > forecast.Daily {
		return o.Season
	}
	return 3 * o.Season
}

// HistoryRange is how much history ebbflow-autoscaler reads for the
// forecast: the backtest's span and the seasons before it that the
// forecasts read (forecast.DefaultSeasons), and an hour more for the
// seasons' windows and the recent level, within the adapter's bounds (5
// weeks, 11,000 points): 7 days 1 hour at 1 minute for a daily season
// (10,141 points), 5 weeks at 5 minutes for a weekly one (10,081).
func (o ForecastOptions) HistoryRange() time.Duration {
	r := forecast.DefaultSeasons*o.Season + o.BacktestSpan() + time.Hour
	return min(r, 5*forecast.Weekly)
}

// HistoryStep is the step of the history ebbflow-autoscaler reads for the
// forecast: one minute for a daily season, five minutes for a weekly one
// (within the adapter's bound on points).
func (o ForecastOptions) HistoryStep() time.Duration {
	if o.Season > forecast.Daily {
		return 5 * time.Minute
	}
	return time.Minute
}

// forecastOptionsOf applies the defaults to f (nil: no forecast).
func forecastOptionsOf(f *v1alpha1.MetricForecast) *ForecastOptions {
	if f == nil {
		return nil
	}
	o := &ForecastOptions{Season: forecast.Daily, SeasonName: v1alpha1.SeasonDaily,
		Method: forecast.Method(f.Method), Lead: DefaultPodStartup + DefaultSyncPeriod,
		Startup: DefaultPodStartup, Mode: f.Mode}
	if f.Season == v1alpha1.SeasonWeekly {
		o.Season, o.SeasonName = forecast.Weekly, v1alpha1.SeasonWeekly
	}
	if o.Method == "" {
		o.Method = DefaultForecastMethod
	}
	if f.PodStartup != nil {
		o.Startup = f.PodStartup.Duration
		o.Lead = f.PodStartup.Duration + DefaultSyncPeriod
	}
	if o.Mode == "" {
		o.Mode = v1alpha1.ForecastAuto
	}
	if f.Lead != nil {
		o.Lead = f.Lead.Duration
	}
	return o
}

// forecastOutcome is one metric's forecast in an evaluation.
type forecastOutcome struct {
	Index int
	Opts  ForecastOptions
	// Forecast is the forecast's value (in the metric's unit), or why
	// there is none; Replicas what it asks for when OK.
	Forecast forecast.Forecast
	Replicas int32
	// Backtest is the forecast's backtest (when the forecast is OK);
	// Applied says the floor applies (Opts.Mode and the backtest allow it).
	Backtest forecast.Backtest
	Applied  bool
	// Reason is the Forecasting condition's reason for this forecast;
	// Message describes it for the record and the condition.
	Reason, Message string
}

// Forecasting condition reasons.
const (
	ReasonForecastApplied = "ForecastAvailable"
	ReasonNoForecast      = "NoForecast"
	ReasonBacktestPending = "BacktestPending"
	ReasonNotPaidOff      = "NotPaidOff"
	ReasonReportOnly      = "ReportOnly"
)

// forecasts computes the forecast of every metric that has one, and its
// backtest (kept in the Memory for BacktestRefresh).
func (r *Result) forecasts() []forecastOutcome {
	in := &r.in
	var out []forecastOutcome
	tol := replicas.TolerancesFor(in.Settings.Tolerance, in.Spec.HPA.Behavior)
	for i, o := range in.Spec.MetricOptions {
		if o.Forecast == nil || i >= len(in.Readings) {
			continue
		}
		fo := forecastOutcome{Index: i, Opts: *o.Forecast}
		rd := in.Readings[i]
		name := fmt.Sprintf("spec.metrics[%d].forecast (%s)", i, MetricName(rd.Spec))
		kind, err := Classify(rd.Spec)
		switch {
		case err != nil:
		case !forecastable(rd.Spec.Type):
			err = fmt.Errorf("applies to Pods, Object and External metrics only, not %s", rd.Spec.Type)
		case rd.Series == nil && rd.SeriesErr != nil:
			err = rd.SeriesErr
		case rd.Series == nil:
			err = ErrNoHistory
		}
		if err == nil {
			fo.Forecast = forecast.Of(*rd.Series, forecast.Request{Now: in.Now, Lead: o.Forecast.Lead,
				Season: o.Forecast.Season, Method: o.Forecast.Method, Latest: latestOf(rd, in.Now, in.Pods)})
			if !fo.Forecast.OK {
				err = errors.New(fo.Forecast.Message)
			}
		}
		if err != nil {
			fo.Forecast.OK = false
			fo.Reason = ReasonNoForecast
			fo.Message = fmt.Sprintf("no forecast for %s: %v; the metric decides alone", name, err)
			out = append(out, fo)
			continue
		}
		fo.Replicas = forecastReplicas(kind, rd.Spec, fo.Forecast.Value, in.Scale.SpecReplicas, tol)
		fo.Backtest = r.backtest(i, kind, rd, *o.Forecast)
		what := fmt.Sprintf("forecast of %s: %.4g in %v (%s season, %s, %d past seasons) asks for %d replicas",
			MetricName(rd.Spec), fo.Forecast.Value, o.Forecast.Lead, o.Forecast.SeasonName, o.Forecast.Method, fo.Forecast.Seasons, fo.Replicas)
		switch {
		case o.Forecast.Mode == v1alpha1.ForecastReportOnly:
			fo.Reason, fo.Message = ReasonReportOnly, fmt.Sprintf("%s; not applied (mode ReportOnly); %s", what, fo.Backtest.Summary())
		case o.Forecast.Mode == v1alpha1.ForecastAlways:
			fo.Applied, fo.Reason, fo.Message = true, ReasonForecastApplied, fmt.Sprintf("%s (mode Always; %s)", what, fo.Backtest.Summary())
		case fo.Backtest.PaysOff():
			fo.Applied, fo.Reason, fo.Message = true, ReasonForecastApplied, fmt.Sprintf("%s (%s: paid off)", what, fo.Backtest.Summary())
		case !fo.Backtest.OK:
			fo.Reason, fo.Message = ReasonBacktestPending, fmt.Sprintf("%s; not applied until a backtest shows it pays off: %s", what, fo.Backtest.Summary())
		default:
			fo.Reason, fo.Message = ReasonNotPaidOff, fmt.Sprintf("%s; not applied: %s, not at most %.2f× for at most %+.0f%%", what,
				fo.Backtest.Summary(), forecast.PayOffRatio, 100*forecast.PayOffExtra)
		}
		out = append(out, fo)
	}
	return out
}

// BacktestMemo is a forecast's last backtest, kept in the Memory for
// BacktestRefresh: Key is what it was computed for (its request without
// the time), At when.
type BacktestMemo struct {
	Key    forecast.BacktestRequest
	At     time.Time
	Result forecast.Backtest
}

// backtest is metric i's backtest from the Memory's memo when it is
// younger than BacktestRefresh and for the same forecast and target, else
// computed now over o.BacktestSpan() and kept.
func (r *Result) backtest(i int, kind MetricKind, rd Reading, o ForecastOptions) forecast.Backtest {
	in := &r.in
	req := forecast.BacktestRequest{
		Request: forecast.Request{Now: in.Now, Lead: o.Lead, Season: o.Season, Method: o.Method},
		Span:    o.BacktestSpan(), Unit: backtestUnit(kind, rd.Spec), Startup: o.Startup,
		Stabilization: downscaleStabilization(in.Spec.HPA.Behavior, in.Settings.DownscaleStabilization),
	}
	key := req
	key.Now = time.Time{} // the request but its time
	h := in.Memory
	if m, ok := h.Backtests[i]; ok && m.Key == key && !in.Now.Before(m.At) && in.Now.Sub(m.At) < BacktestRefresh {
		return m.Result
	}
	b := forecast.BacktestOf(*rd.Series, req)
	if h.Backtests == nil {
		h.Backtests = map[int]BacktestMemo{}
	}
	h.Backtests[i] = BacktestMemo{Key: key, At: in.Now, Result: b}
	return b
}

// backtestUnit is the load one pod serves at the metric's target, in its
// history's unit (0 for a Value target: its replicas are proportional to
// the value).
func backtestUnit(kind MetricKind, spec autoscalingv2.MetricSpec) float64 {
	switch kind {
	case PodsAverageValue:
		return spec.Pods.Target.AverageValue.AsApproximateFloat64()
	case ObjectAverageValue:
		return spec.Object.Target.AverageValue.AsApproximateFloat64()
	case ExternalAverageValue:
		return spec.External.Target.AverageValue.AsApproximateFloat64()
	}
	return 0
}

// downscaleStabilization is the behavior's scale-down stabilization
// window, def when it sets none.
func downscaleStabilization(b *autoscalingv2.HorizontalPodAutoscalerBehavior, def time.Duration) time.Duration {
	if b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
		return time.Duration(*b.ScaleDown.StabilizationWindowSeconds) * time.Second
	}
	return def
}

// latestOf is the metric's current reading in its history's unit (an
// External metric's values summed, an Object metric's value, a Pods
// metric's values summed over the ready pods: the workload's total, as its
// history is), for LevelCorrected's and LevelPeak's recent level: the
// controller reads a history only every few minutes, the current value at
// every evaluation. At is the time the metrics API reported, Now at the
// latest (the clocks of the adapter and the controller differ). None (zero)
// for a failed or empty read, and for a Pods metric without a ready pod
// that reported.
func latestOf(rd Reading, now time.Time, pods []replicas.Pod) forecast.Sample {
	if rd.FetchErr != nil || rd.Err != nil || rd.Empty {
		return forecast.Sample{}
	}
	var milli float64 // summed as floats: int64 milli-units can overflow
	switch {
	case rd.Spec.Type == autoscalingv2.ObjectMetricSourceType:
		milli = float64(rd.Value)
	case rd.Spec.Type == autoscalingv2.ExternalMetricSourceType && len(rd.Values) > 0:
		for _, v := range rd.Values {
			milli += float64(v)
		}
	case rd.Spec.Type == autoscalingv2.PodsMetricSourceType:
		n := 0
		for _, p := range pods {
			ready := p.Ready != nil && p.Ready.Status == corev1.ConditionTrue && !p.Deleting && p.Phase != corev1.PodFailed
			if s, ok := rd.Samples[p.Name]; ok && ready {
				milli += float64(s.Value)
				n++
			}
		}
		if n == 0 {
			return forecast.Sample{}
		}
	default:
		return forecast.Sample{}
	}
	at := rd.Timestamp
	if at.IsZero() || at.After(now) {
		at = now
	}
	return forecast.Sample{At: at, Value: milli / 1000}
}

func forecastable(t autoscalingv2.MetricSourceType) bool {
	return t == autoscalingv2.PodsMetricSourceType || t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType
}

// forecastReplicas is what value asks for as the metric's calculation would
// (a Pods metric's value is the total load): value over the per-pod target,
// or the usage ratio times the current count for a Value target; the
// current count when within the tolerance.
func forecastReplicas(kind MetricKind, spec autoscalingv2.MetricSpec, value float64, current int32, tol replicas.Tolerances) int32 {
	var raw float64
	switch kind {
	case PodsAverageValue:
		raw = value / spec.Pods.Target.AverageValue.AsApproximateFloat64()
	case ObjectAverageValue:
		raw = value / spec.Object.Target.AverageValue.AsApproximateFloat64()
	case ExternalAverageValue:
		raw = value / spec.External.Target.AverageValue.AsApproximateFloat64()
	case ObjectValue:
		raw = value / spec.Object.Target.Value.AsApproximateFloat64() * float64(current)
	case ExternalValue:
		raw = value / spec.External.Target.Value.AsApproximateFloat64() * float64(current)
	}
	if math.IsNaN(raw) || raw <= 0 {
		return 0
	}
	if current > 0 {
		if tol.Within(raw / float64(current)) {
			return current
		}
	}
	return int32(min(math.Ceil(raw), math.MaxInt32))
}

// forecast is the stage Forecast: it computes the forecasts (and their
// condition) and raises a proposal the metrics allow to the largest
// forecast that applies. A proposal of failed metrics is left to upstream's
// rule and the fallback (a forecast never decides alone), a Hold to the
// fallback.
func (r *Result) forecast(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if p.Decided {
		return p, nil
	}
	r.forecastOutcomes = r.forecasts()
	r.set(forecastCondition(r.forecastOutcomes), r.in.Now)
	if !r.Decision.Aggregate.Usable {
		return p, nil
	}
	return floorByForecast(r.forecastOutcomes, p)
}

// floorByForecast raises p to the largest forecast that applies; its steps
// are every forecast's: the one that raised p from p's count to its own,
// the others (what each asked for, or why there was none) at p's count.
func floorByForecast(fs []forecastOutcome, p proposal) (proposal, []v1alpha1.DecisionStep) {
	best := -1
	for i, f := range fs {
		if f.Applied && (best < 0 || f.Replicas > fs[best].Replicas) {
			best = i
		}
	}
	next := p
	var steps []v1alpha1.DecisionStep
	for i, f := range fs {
		if i == best && !p.Hold && f.Replicas > p.Replicas {
			var raised []v1alpha1.DecisionStep
			next, raised = p.override(&Override{Replicas: f.Replicas, Stage: StageForecast, Message: f.Message})
			steps = append(steps, raised...)
			continue
		}
		steps = append(steps, step(StageForecast, p.Replicas, p.Replicas, f.Message))
	}
	return next, steps
}

// forecastCondition is the Forecasting condition: True when every metric
// with a forecast has one that applies, else False naming the first
// without (no forecast, a backtest pending or not paid off, report only).
func forecastCondition(fs []forecastOutcome) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, f := range fs {
		if !f.Applied {
			return condition(ConditionForecasting, corev1.ConditionFalse, f.Reason, f.Message)
		}
	}
	return condition(ConditionForecasting, corev1.ConditionTrue, ReasonForecastApplied, fs[0].Message)
}

// ForecastFigure is one metric's usable forecast in an evaluation (for the
// controller's self-metrics).
type ForecastFigure struct {
	// Index is the metric's place in spec.metrics; Metric its name
	// (MetricName).
	Index  int
	Metric string
	// Value is the forecast value in the metric's unit; Replicas what it
	// asks for; Applied whether its floor applies.
	Value    float64
	Replicas int32
	Applied  bool
	// ShortRatio is the backtest's (forecast.Backtest.ShortRatio; NaN
	// without a backtest or a shortfall).
	ShortRatio float64
}

// Forecasts are the evaluation's usable forecasts, in spec order; a metric
// without one (condition Forecasting says why) is left out.
func (r *Result) Forecasts() []ForecastFigure {
	var out []ForecastFigure
	for _, f := range r.forecastOutcomes {
		if f.Forecast.OK && f.Index < len(r.in.Readings) {
			ratio := math.NaN()
			if f.Backtest.OK {
				ratio = f.Backtest.ShortRatio()
			}
			out = append(out, ForecastFigure{Index: f.Index, Metric: MetricName(r.in.Readings[f.Index].Spec),
				Value: f.Forecast.Value, Replicas: f.Replicas, Applied: f.Applied, ShortRatio: ratio})
		}
	}
	return out
}
