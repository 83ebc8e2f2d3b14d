package simulate

import (
	"fmt"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// forecastHistories converts the series of the metrics with a forecast to
// the metric's unit once (NaN where missing), for the forecasts of every
// step: the recorded value of an Object or External metric, the load of a
// Pods metric (the per-pod values summed over the pods that existed, so
// renamed pods do not matter). With Config.HistoryRefresh, an External or
// Object metric's history is at the step the controller reads
// (ForecastOptions.HistoryStep) when that is a multiple of the replay's:
// every stride-th value; stride[j] is 1 otherwise.
func forecastHistories(cfg Config, spec evaluation.Spec, series []Series) ([][]float64, []forecast.History, []int) {
	var hist [][]float64
	var views []forecast.History
	var stride []int
	for j, o := range spec.MetricOptions {
		if o.Forecast == nil || j >= len(spec.HPA.Metrics) {
			continue
		}
		if hist == nil {
			n := len(spec.HPA.Metrics)
			hist, views, stride = make([][]float64, n), make([]forecast.History, n), make([]int, n)
		}
		stride[j] = 1
		if hs := o.Forecast.HistoryStep(); cfg.HistoryRefresh > 0 && !isPods(spec.HPA.Metrics[j]) && hs > cfg.Step && hs%cfg.Step == 0 {
			stride[j] = int(hs / cfg.Step)
		}
		vals := series[j].Values
		hist[j] = make([]float64, 0, (len(vals)+stride[j]-1)/stride[j])
		for i := 0; i < len(vals); i += stride[j] {
			x := math.NaN()
			if vals[i] != Missing {
				x = float64(vals[i]) / 1000
			}
			hist[j] = append(hist[j], x)
		}
		views[j] = forecast.History{Start: cfg.Start, Step: cfg.Step * time.Duration(stride[j])}
	}
	return hist, views, stride
}

func isPods(m autoscalingv2.MetricSpec) bool { return m.Type == autoscalingv2.PodsMetricSourceType }

// historyAt is metric j's history at step i (nil without a forecast): what
// the controller would have read, up to step i, or up to its last read
// when Config.HistoryRefresh has not passed since (the controller reads at
// an evaluation when the refresh is due), at the controller's step (see
// forecastHistories). A Pods metric's history, which only the replay has
// (the controller reads none), is up to step i.
func (r *replay) historyAt(j, i int, now time.Time) *forecast.History {
	if r.history == nil || r.history[j] == nil {
		return nil
	}
	if r.cfg.HistoryRefresh <= 0 || isPods(r.spec.HPA.Metrics[j]) || r.readTo[j] < 0 || (r.evaluating && now.Sub(r.readAt[j]) >= r.cfg.HistoryRefresh) {
		r.readTo[j], r.readAt[j] = i, now
	}
	r.view[j].Values = r.history[j][:r.readTo[j]/r.stride[j]+1]
	return &r.view[j]
}

// validateForecast reports a forecast on a metric that cannot have one,
// naming the field.
func validateForecast(spec *evaluation.Spec) error {
	for j, o := range spec.MetricOptions {
		if o.Forecast == nil || j >= len(spec.HPA.Metrics) {
			continue
		}
		switch t := spec.HPA.Metrics[j].Type; t {
		case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		default:
			return fmt.Errorf("spec.metrics[%d].forecast: applies to Pods, Object and External metrics only, not %s", j, t)
		}
		if !slices.Contains(forecast.Methods, o.Forecast.Method) {
			return fmt.Errorf("spec.metrics[%d].forecast.method: unknown method %q (one of %v)", j, o.Forecast.Method, forecast.Methods)
		}
		if o.Forecast.Lead < 0 || o.Forecast.Lead >= o.Forecast.Season {
			return fmt.Errorf("spec.metrics[%d].forecast.lead: %v must be in [0, the season %v)", j, o.Forecast.Lead, o.Forecast.Season)
		}
	}
	return nil
}
