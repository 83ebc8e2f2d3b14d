package simulate

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// replay is the state of one replay between steps: the simulated pods, the
// autoscaler's history and status, and buffers reused by every step.
type replay struct {
	cfg    Config
	spec   evaluation.Spec
	series []Series
	kinds  []evaluation.MetricKind
	// perPod are the per-pod on-target usages of Resource metrics (see
	// perPodTarget); 0 for other metrics.
	perPod []float64
	// units are the per-pod target loads the score divides by (unitLoads).
	units []float64
	// histories holds, per metric with a forecast, its history (nil for the
	// others; forecast.go).
	histories []*forecastHistory
	fleet     *fleet
	hist      evaluation.Memory
	// status is the autoscaler's status, carried from step to step as the
	// API server would.
	status       autoscalingv2.HorizontalPodAutoscalerStatus
	tolerances   replicas.Tolerances
	readings     []evaluation.Reading
	proportional []evaluation.ProportionalReading
	scratch      evaluation.Scratch
	samples      []replicas.Samples
	values       []int64
	ratios       []float64
	// due is when the autoscaler is next evaluated (see Spec.NextEvaluation).
	due time.Time
	// write is the evaluations' write (evaluation.WriteScale): it scales the
	// fleet at now, the time of the step.
	write evaluation.WriteScale
	now   time.Time
}

func newReplay(cfg Config, spec evaluation.Spec, series []Series) *replay {
	n := len(spec.HPA.Metrics)
	r := &replay{
		cfg: cfg, spec: spec, series: series,
		kinds:        make([]evaluation.MetricKind, n),
		perPod:       make([]float64, n),
		fleet:        newFleet(cfg.InitialReplicas, cfg.Start, cfg.PodStartup, cfg.Template),
		tolerances:   replicas.TolerancesFor(cfg.Tolerance, spec.HPA.Behavior),
		readings:     make([]evaluation.Reading, n),
		proportional: make([]evaluation.ProportionalReading, len(spec.Proportional)),
		samples:      make([]replicas.Samples, n),
		values:       make([]int64, n*cfg.Steps),
		ratios:       make([]float64, n*cfg.Steps),
	}
	if cfg.InitialReplicas == 0 && evaluation.MinReplicas(&spec.HPA) == 0 {
		// A target at zero under a spec that may scale to zero is taken as
		// scaled to zero by the autoscaler (else scaling would be disabled).
		r.status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{
			Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero"}}
	}
	for i, m := range spec.HPA.Metrics {
		r.kinds[i], _ = evaluation.Classify(m)
		if isPerPod(m) {
			r.samples[i] = replicas.Samples{}
		}
		if isResource(m) {
			r.perPod[i], _ = perPodTarget(r.kinds[i], m, cfg.Template) // validated
		}
	}
	r.units = unitLoads(&spec, r.kinds, r.perPod)
	r.histories = forecastHistories(cfg, spec, series)
	r.write = func(desired int32, _ string) (time.Time, error) {
		r.fleet.scale(desired, r.now)
		return r.now, nil
	}
	return r
}

// step runs evaluation i: observe the simulated pods, the recorded values
// and node counts, evaluate (evaluation.Evaluate, as the controller, its
// write scaling the fleet).
func (r *replay) step(i int) Step {
	now := r.cfg.Start.Add(time.Duration(i) * r.cfg.Step)
	n := len(r.spec.HPA.Metrics)
	current := r.fleet.replicas()
	ready := r.fleet.observe(now)
	out := Step{Time: now, Current: current, Ready: ready, Needed: needed(r.series, r.units, i),
		Values: r.values[i*n : (i+1)*n], Ratios: r.ratios[i*n : (i+1)*n]}
	in := evaluation.Input{
		Spec: r.spec, Settings: r.cfg.Settings, Namespace: r.cfg.Namespace, Status: r.status,
		Scale: evaluation.Scale{SpecReplicas: current, StatusReplicas: current},
		Now:   now, Memory: &r.hist, Scratch: &r.scratch,
	}
	for j := range out.Values {
		out.Values[j], out.Ratios[j] = Missing, math.NaN()
	}
	due := !now.Before(r.due)
	if evaluation.ReadsMetrics(&in) {
		in.Pods = r.fleet.pods
		for j := range r.readings {
			r.read(j, i, now, due, ready, &out)
		}
		for j := range r.proportional {
			r.proportional[j] = r.size(n+j, i)
		}
		in.Readings, in.Proportional = r.readings, r.proportional
	}
	out.Replicas = current
	if !due {
		// Not due (a spec.syncPeriodSeconds longer than the step): observed
		// only.
		r.underProvisioned(&out)
		return out
	}
	r.now = now
	res := evaluation.Evaluate(in, r.write)
	r.due = now.Add(r.spec.NextEvaluation(&res.Floor, now, r.cfg.Step))
	out.Failed = res.Decision.Failed
	if res.Decision.Failed && res.Decision.Err != nil {
		out.Reason = res.Decision.Err.Error()
	}
	if res.Scaled {
		out.Replicas, out.Rescaled, out.Reason = res.Desired, true, res.Decision.RescaleReason
	}
	r.status = res.Status
	for j := range out.Values {
		// treatMissingAs Zero read a missing value as 0.
		if out.Values[j] == Missing && j < len(res.Metrics) && res.Metrics[j].Reading.Err == nil {
			out.Values[j], out.Ratios[j] = 0, usageRatio(r.kinds[j], r.spec.HPA.Metrics[j], 0, current)
		}
	}
	r.underProvisioned(&out)
	return out
}

// underProvisioned marks out when some metric's usage ratio exceeds the
// scale-up tolerance.
func (r *replay) underProvisioned(out *Step) {
	for _, ratio := range out.Ratios {
		if ratio > 1+r.tolerances.ScaleUp {
			out.UnderProvisioned = true
		}
	}
}

// size is the recorded cluster size of series k at step i, as the node
// informer would have counted it.
func (r *replay) size(k, i int) evaluation.ProportionalReading {
	s := r.series[k].Sizes[i]
	if s.Nodes < 0 {
		return evaluation.ProportionalReading{SizeErr: ErrNoSample}
	}
	return evaluation.ProportionalReading{Size: s}
}

// read fills reading j from the recorded value at step i, as the metrics
// APIs would have served it, and notes the value and usage ratio in out.
func (r *replay) read(j, i int, now time.Time, due bool, ready int32, out *Step) {
	spec := r.spec.HPA.Metrics[j]
	rd := &r.readings[j]
	*rd = evaluation.Reading{Spec: spec, Timestamp: now, Series: r.historyAt(j, i, due)}
	v := r.series[j].Values[i]
	if v == Missing || (isPerPod(spec) && ready == 0) {
		rd.FetchErr, rd.Empty = ErrNoSample, v == Missing
		return
	}
	switch spec.Type {
	case autoscalingv2.PodsMetricSourceType:
		v = int64(math.Round(float64(v) / float64(ready)))
		r.fleet.fill(r.samples[j], replicas.Sample{Value: v, Timestamp: now})
		rd.Samples = r.samples[j]
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		v = int64(math.Round(float64(v) / float64(ready)))
		r.fleet.fill(r.samples[j], replicas.Sample{Value: v, Timestamp: now, Window: r.cfg.ResourceWindow})
		rd.Samples = r.samples[j]
	case autoscalingv2.ObjectMetricSourceType:
		rd.Value = v
	case autoscalingv2.ExternalMetricSourceType:
		rd.Values = []int64{v}
	}
	out.Values[j] = v
	if isResource(spec) {
		out.Ratios[j] = float64(v) / r.perPod[j]
		return
	}
	out.Ratios[j] = usageRatio(r.kinds[j], spec, v, out.Current)
}

// usageRatio is how far value is from the metric's target (1 on target),
// per replica for the average-value kinds.
func usageRatio(kind evaluation.MetricKind, spec autoscalingv2.MetricSpec, value int64, current int32) float64 {
	var target int64
	perReplica := false
	switch kind {
	case evaluation.PodsAverageValue:
		target = spec.Pods.Target.AverageValue.MilliValue()
	case evaluation.ObjectValue:
		target = spec.Object.Target.Value.MilliValue()
	case evaluation.ObjectAverageValue:
		target, perReplica = spec.Object.Target.AverageValue.MilliValue(), true
	case evaluation.ExternalValue:
		target = spec.External.Target.Value.MilliValue()
	case evaluation.ExternalAverageValue:
		target, perReplica = spec.External.Target.AverageValue.MilliValue(), true
	}
	if target <= 0 {
		return math.NaN()
	}
	t := float64(target)
	if perReplica {
		if current <= 0 {
			return math.NaN()
		}
		t *= float64(current)
	}
	return float64(value) / t
}
