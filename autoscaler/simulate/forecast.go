package simulate

import (
	"fmt"
	"math"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/forecast"
)

// forecastHistory is one metric's history for its forecast: the recorded
// values in the metric's unit (NaN where missing), every stride-th replay
// step, and the view of them the last read holds.
type forecastHistory struct {
	values []float64
	view   forecast.Series
	stride int
	// refresh is true when the history is read every Config.HistoryRefresh,
	// as the controller reads histories.
	refresh bool
	// readTo is the last replay step the last read holds (-1: none yet).
	readTo int
}

// forecastHistories converts the series of the metrics with a forecast to
// the metric's unit once, for the forecasts of every step (nil for the
// other metrics): the recorded value of an Object or External metric, the
// load of a Pods metric (the per-pod values summed over the pods that
// existed, so renamed pods do not matter). With Config.HistoryRefresh, the
// history is at the step the controller reads (ForecastOptions.HistoryStep)
// when that is a multiple of the replay's.
func forecastHistories(cfg Config, spec evaluation.Spec, series []Series) []*forecastHistory {
	var out []*forecastHistory
	for j, o := range spec.MetricOptions {
		if o.Forecast == nil || j >= len(spec.HPA.Metrics) {
			continue
		}
		if out == nil {
			out = make([]*forecastHistory, len(spec.HPA.Metrics))
		}
		h := &forecastHistory{stride: 1, readTo: -1, refresh: cfg.HistoryRefresh > 0}
		if hs := o.Forecast.HistoryStep(); h.refresh && hs > cfg.Step && hs%cfg.Step == 0 {
			h.stride = int(hs / cfg.Step)
		}
		vals := series[j].Values
		h.values = make([]float64, 0, (len(vals)+h.stride-1)/h.stride)
		for i := 0; i < len(vals); i += h.stride {
			x := math.NaN()
			if vals[i] != Missing {
				x = float64(vals[i]) / 1000
			}
			h.values = append(h.values, x)
		}
		h.view = forecast.Series{Start: cfg.Start, Step: cfg.Step * time.Duration(h.stride)}
		out[j] = h
	}
	return out
}

// historyAt is metric j's history at step i (nil without a forecast): what
// the controller would have read, up to step i, or up to its last read
// while Config.HistoryRefresh has not passed since (the controller reads
// at an evaluation, due, when the refresh is due), at the controller's step
// (see forecastHistories).
func (r *replay) historyAt(j, i int, due bool) *forecast.Series {
	if r.histories == nil || r.histories[j] == nil {
		return nil
	}
	h := r.histories[j]
	if !h.refresh || h.readTo < 0 || due && time.Duration(i-h.readTo)*r.cfg.Step >= r.cfg.HistoryRefresh {
		h.readTo = i
	}
	h.view.Values = h.values[:h.readTo/h.stride+1]
	return &h.view
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
		switch o.Forecast.Mode {
		case v1alpha1.ForecastAuto, v1alpha1.ForecastAlways, v1alpha1.ForecastReportOnly:
		default:
			return fmt.Errorf("spec.metrics[%d].forecast.mode: unknown mode %q (one of Auto, Always, ReportOnly)", j, o.Forecast.Mode)
		}
		if o.Forecast.Lead < 0 || o.Forecast.Lead >= o.Forecast.Season {
			return fmt.Errorf("spec.metrics[%d].forecast.lead: %v must be in [0, the season %v)", j, o.Forecast.Lead, o.Forecast.Season)
		}
	}
	return nil
}
