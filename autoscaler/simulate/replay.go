package simulate

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/pipeline"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// replay is the state of one replay between steps: the simulated pods, the
// autoscaler's history and status, and buffers reused by every step.
type replay struct {
	cfg    Config
	spec   pipeline.Spec
	series []Series
	kinds  []decision.Kind
	// perPod are the per-pod on-target usages of Resource metrics (see
	// perPodTarget); 0 for other metrics.
	perPod []float64
	fleet  *fleet
	hist   pipeline.History
	// scaledToZero is the ScaledToZero condition of the status.
	scaledToZero bool
	tolerances   replicas.Tolerances
	readings     []decision.Reading
	scratch      pipeline.Scratch
	samples      []replicas.Samples
	values       []int64
	ratios       []float64
}

func newReplay(cfg Config, spec pipeline.Spec, series []Series) *replay {
	n := len(spec.HPA.Metrics)
	r := &replay{
		cfg: cfg, spec: spec, series: series,
		kinds:      make([]decision.Kind, n),
		perPod:     make([]float64, n),
		fleet:      newFleet(cfg.InitialReplicas, cfg.Start, cfg.PodStartup, cfg.Template),
		tolerances: replicas.TolerancesFor(cfg.Tolerance, spec.HPA.Behavior),
		readings:   make([]decision.Reading, n),
		samples:    make([]replicas.Samples, n),
		values:     make([]int64, n*cfg.Steps),
		ratios:     make([]float64, n*cfg.Steps),
		// A target at zero under a spec that may scale to zero is taken as
		// scaled to zero by the autoscaler (else scaling would be disabled).
		scaledToZero: cfg.InitialReplicas == 0 && pipeline.MinReplicas(&spec.HPA) == 0,
	}
	for i, m := range spec.HPA.Metrics {
		r.kinds[i], _ = decision.Classify(m)
		if isPerPod(m) {
			r.samples[i] = replicas.Samples{}
		}
		if isResource(m) {
			r.perPod[i], _ = perPodTarget(r.kinds[i], m, cfg.Template) // validated
		}
	}
	return r
}

// step runs evaluation i: observe the simulated pods and the recorded
// values, evaluate through the pipeline, write the new count to the fleet.
func (r *replay) step(i int) Step {
	now := r.cfg.Start.Add(time.Duration(i) * r.cfg.Step)
	n := len(r.spec.HPA.Metrics)
	current := r.fleet.replicas()
	ready := r.fleet.observe(now)
	out := Step{Time: now, Current: current, Ready: ready,
		Values: r.values[i*n : (i+1)*n], Ratios: r.ratios[i*n : (i+1)*n]}
	req := pipeline.Request{
		Spec: r.spec,
		Bounds: decision.Bounds{
			CurrentReplicas: current, MinReplicas: pipeline.MinReplicas(&r.spec.HPA), MaxReplicas: r.spec.HPA.MaxReplicas,
			ScaledToZero: r.scaledToZero, HasObjectOrExternal: decision.HasObjectOrExternal(r.spec.HPA.Metrics),
		},
		DownscaleStabilization: r.cfg.DownscaleStabilization,
		Now:                    now,
		Scratch:                &r.scratch,
	}
	req.Gate = decision.Check(req.Bounds)
	for j := range out.Values {
		out.Values[j], out.Ratios[j] = Missing, math.NaN()
	}
	if req.Gate.Action == decision.ComputeMetrics {
		req.Shared = decision.Shared{
			SpecReplicas: current, StatusReplicas: current, Pods: r.fleet.pods, Tolerances: r.tolerances,
			Timing: replicas.PodTiming{CPUInitializationPeriod: r.cfg.CPUInitializationPeriod, InitialReadinessDelay: r.cfg.InitialReadinessDelay, Now: now},
		}
		for j := range r.readings {
			r.read(j, i, now, ready, &out)
		}
		req.Readings = r.readings
	}
	dec, adj := pipeline.Evaluate(req, &r.hist, now)
	out.Replicas, out.Failed = current, dec.D.Failed
	if dec.D.Failed && dec.D.Err != nil {
		out.Reason = dec.D.Err.Error()
	}
	if adj.Write {
		r.hist.Rescaled(r.spec.HPA.Behavior, current, adj.Desired, now)
		c := decision.ScaledToZeroCondition(current, adj.Desired, req.Bounds.MinReplicas, req.Bounds.HasObjectOrExternal)
		r.scaledToZero = c.Status == corev1.ConditionTrue
		r.fleet.scale(adj.Desired, now)
		out.Replicas, out.Rescaled, out.Reason = adj.Desired, true, dec.D.RescaleReason
	}
	for _, ratio := range out.Ratios {
		if ratio > 1+r.tolerances.ScaleUp {
			out.UnderProvisioned = true
		}
	}
	return out
}

// read fills reading j from the recorded value at step i, as the metrics
// APIs would have served it, and notes the value and usage ratio in out.
func (r *replay) read(j, i int, now time.Time, ready int32, out *Step) {
	spec := r.spec.HPA.Metrics[j]
	rd := &r.readings[j]
	*rd = decision.Reading{Spec: spec, Timestamp: now}
	v := r.series[j].Values[i]
	perPod := isPerPod(spec)
	if v == Missing && !perPod &&
		j < len(r.spec.MetricOptions) && r.spec.MetricOptions[j].MissingAsZero {
		v = 0
	}
	if v == Missing || (perPod && ready == 0) {
		rd.Err = decision.FetchError(spec, r.cfg.Namespace, ErrNoSample)
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
func usageRatio(kind decision.Kind, spec autoscalingv2.MetricSpec, value int64, current int32) float64 {
	var target int64
	perReplica := false
	switch kind {
	case decision.PodsAverageValue:
		target = spec.Pods.Target.AverageValue.MilliValue()
	case decision.ObjectValue:
		target = spec.Object.Target.Value.MilliValue()
	case decision.ObjectAverageValue:
		target, perReplica = spec.Object.Target.AverageValue.MilliValue(), true
	case decision.ExternalValue:
		target = spec.External.Target.Value.MilliValue()
	case decision.ExternalAverageValue:
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
