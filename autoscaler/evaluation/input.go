package evaluation

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Input is one observation of one autoscaler: everything an evaluation
// decides from. The caller fills Spec, Settings, Status and Scale (or
// ScaleErr) first; when ReadsMetrics(&in) holds it reads the pods and the
// metrics too.
type Input struct {
	Spec     Spec
	Settings Settings
	// Namespace is the autoscaler's; Target names the scale target as
	// upstream's messages do (Kind/namespace/name).
	Namespace, Target string
	// Generation and Status are the autoscaler's as read. The evaluation
	// never changes them: Result.Status is the new status.
	Generation int64
	Status     autoscalingv2.HorizontalPodAutoscalerStatus
	// ProportionalStatus are the stored status.currentMetrics entries of
	// the ClusterProportional metrics, by index in spec.metrics.
	ProportionalStatus map[int]v1alpha1.ClusterProportionalStatus
	// ScaleEvents are the stored rescales (behavior.EncodeEvents).
	ScaleEvents string
	// Warnings are problems found before the evaluation (an invalid
	// annotation); they are the first events of the result.
	Warnings []Event
	// ScaleErr is set when the target's /scale could not be read; ScaleCause
	// is what the event and the condition show (ScaleErr when nil).
	ScaleErr, ScaleCause error
	// Scale is the target's /scale: spec.replicas and status.replicas.
	Scale Scale
	// InputsErr is set when the pods could not be determined (no metric was
	// read then); a *SelectorError also reports upstream's event and
	// condition.
	InputsErr error
	// Pods are the pods the scale's selector matches.
	Pods []replicas.Pod
	// Readings has one entry per Spec.HPA.Metrics entry when ReadsMetrics.
	Readings []Reading
	// Proportional has one entry per Spec.Proportional entry when
	// ReadsMetrics.
	Proportional []ProportionalReading
	// Now is when the evaluation started (the Memory is seeded then, as
	// upstream's reconcile does; conditions change then). ReadAt is when the
	// observation completed (zero: Now): the decision's time, that of its
	// record, so that no sample read is newer than the decision; upstream
	// reads the clock again before normalizing, and the proposal extensions'
	// ages count up to it.
	Now, ReadAt time.Time
	// Memory is what the autoscaler carries from one evaluation to the
	// next; Evaluate updates it (required).
	Memory *Memory
	// Scratch, when set, lends its buffers to the result (see Scratch).
	Scratch *Scratch
}

// Scale is what the evaluation reads of the target's /scale.
type Scale struct {
	SpecReplicas, StatusReplicas int32
}

// SelectorError is a problem with the scale's pod selector, reported as
// upstream does: a Warning event and ScalingActive=False.
type SelectorError struct {
	// EventReason and Message are the event's; ConditionReason and
	// ConditionMessage the condition's.
	EventReason, Message              string
	ConditionReason, ConditionMessage string
}

func (e *SelectorError) Error() string { return e.Message }

// MetricOptions are ebbflow's per-metric options.
type MetricOptions struct {
	// Activation is the metric's activation threshold, if set.
	Activation *resource.Quantity
	// MissingAsZero reads an empty answer as the value 0.
	MissingAsZero bool
	// Forecast is the metric's forecast (forecast.go); nil: none.
	Forecast *ForecastOptions
}

// Spec is what an evaluation reads of an autoscaler's spec: the HPA spec
// (without ClusterProportional metrics), the extensions and the options of
// each HPA metric.
type Spec struct {
	HPA        autoscalingv2.HorizontalPodAutoscalerSpec
	Extensions Extensions
	// MetricOptions has one entry per HPA.Metrics entry.
	MetricOptions []MetricOptions
	// Proportional are the ClusterProportional metrics (Autoscalers only);
	// they are not in HPA.Metrics.
	Proportional []ProportionalSource
	// Schedules are spec.schedules and SyncPeriod spec.syncPeriodSeconds
	// (Autoscalers only; 0: the controller's period), see schedule.go.
	Schedules  []Schedule
	SyncPeriod time.Duration
}

// Extensions is the extensions an autoscaler sets. The zero Extensions sets
// none.
type Extensions struct {
	// Paused: never write the scale.
	Paused bool
	// DryRun: record what would be done, never write the scale.
	DryRun bool
	// ScaleToZero and Fallback configure the stages Activation and Fallback
	// (fallback_activation.go); nil: off.
	ScaleToZero *ScaleToZero
	Fallback    *Fallback
}

// FromAutoscaler returns the evaluation's view of an Autoscaler's spec. The
// result shares nothing mutable with spec.
func FromAutoscaler(spec *v1alpha1.AutoscalerSpec) Spec {
	return Spec{
		HPA:           v1alpha1.ToHPASpec(spec),
		Extensions:    extensionsOf(spec),
		MetricOptions: metricOptionsOf(spec.Metrics),
		Proportional:  proportionalOf(spec.Metrics),
		Schedules:     compileSchedules(spec),
		SyncPeriod:    syncPeriodOf(spec),
	}
}

// FromHPA returns the evaluation's view of a HorizontalPodAutoscaler run in
// drop-in mode: its spec, and the extensions and the sync period its
// annotations set (v1alpha1.PausedAnnotation and DryRunAnnotation: "true" or
// "false"; v1alpha1.SyncPeriodAnnotation: whole seconds in range). An
// invalid annotation is read as unset and described in warnings, one
// sentence each. ebbflow-autoscaler and `ebbflow simulate` read an HPA
// through it alike. The result shares nothing mutable with hpa.
func FromHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) (spec Spec, warnings []string) {
	ann := hpa.Annotations
	flag := func(key string) bool {
		v, ok := ann[key]
		switch {
		case !ok || v == "false":
			return false
		case v == "true":
			return true
		}
		warnings = append(warnings, fmt.Sprintf("annotation %s has the invalid value %q (want \"true\" or \"false\"); treated as \"false\"", key, v))
		return false
	}
	spec = Spec{HPA: *hpa.Spec.DeepCopy(), Extensions: Extensions{Paused: flag(v1alpha1.PausedAnnotation), DryRun: flag(v1alpha1.DryRunAnnotation)}}
	if v, ok := ann[v1alpha1.SyncPeriodAnnotation]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < v1alpha1.MinSyncPeriodSeconds || n > v1alpha1.MaxSyncPeriodSeconds {
			warnings = append(warnings, fmt.Sprintf("annotation %s has the invalid value %q (want whole seconds from %d to %d); the controller's sync period applies",
				v1alpha1.SyncPeriodAnnotation, v, v1alpha1.MinSyncPeriodSeconds, v1alpha1.MaxSyncPeriodSeconds))
		} else {
			spec.SyncPeriod = time.Duration(n) * time.Second
		}
	}
	return spec, warnings
}

// HasForecast reports whether a metric of s has a forecast (forecast.go).
func (s *Spec) HasForecast() bool {
	for _, o := range s.MetricOptions {
		if o.Forecast != nil {
			return true
		}
	}
	return false
}

// hasActivation reports whether a metric of s has an activation
// threshold (fallback_activation.go).
func (s *Spec) hasActivation() bool {
	for _, o := range s.MetricOptions {
		if o.Activation != nil {
			return true
		}
	}
	return false
}

// Period is how long after an evaluation the autoscaler is due again
// without a schedule: its own sync period, else global (the controller's).
// Spec.NextEvaluation shortens it for a schedule's floor.
func (s *Spec) Period(global time.Duration) time.Duration {
	if s.SyncPeriod > 0 {
		return s.SyncPeriod
	}
	return global
}

// Extensions reads the extensions an Autoscaler's spec sets, with their
// defaults (a fallback without policy holds).
func extensionsOf(spec *v1alpha1.AutoscalerSpec) Extensions {
	ext := Extensions{Paused: spec.Paused, DryRun: spec.DryRun}
	if s := spec.ScaleToZero; s != nil {
		ext.ScaleToZero = &ScaleToZero{}
		if s.After != nil {
			ext.ScaleToZero.After = s.After.Duration
		}
	}
	if f := spec.Fallback; f != nil {
		ext.Fallback = &Fallback{Policy: FallbackPolicy(f.Policy)}
		if ext.Fallback.Policy == "" {
			ext.Fallback.Policy = FallbackHold
		}
		if f.Replicas != nil {
			ext.Fallback.Replicas = *f.Replicas
		}
		if f.After != nil {
			ext.Fallback.After = f.After.Duration
		}
		if f.MaxAge != nil {
			ext.Fallback.MaxAge = f.MaxAge.Duration
		}
	}
	return ext
}

// metricOptionsOf returns the options of the HPA metrics among metrics, in
// the order of v1alpha1.HPAMetrics.
func metricOptionsOf(metrics []v1alpha1.MetricSpec) []MetricOptions {
	var out []MetricOptions
	for _, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType {
			continue
		}
		out = append(out, MetricOptions{Activation: m.Activation, MissingAsZero: m.TreatMissingAs == v1alpha1.MissingAsZero,
			Forecast: forecastOptionsOf(m.Forecast)})
	}
	return out
}

// proportionalOf returns the ClusterProportional metrics with their index.
func proportionalOf(metrics []v1alpha1.MetricSpec) []ProportionalSource {
	var out []ProportionalSource
	for i, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType && m.ClusterProportional != nil {
			out = append(out, ProportionalSource{Index: i, Source: *m.ClusterProportional})
		}
	}
	return out
}

// Settings are the controller-wide settings an evaluation reads, with
// kube-controller-manager's flag names and defaults. ebbflow-autoscaler and
// `ebbflow simulate` register them alike (autoscaler/app/settings).
type Settings struct {
	Tolerance               float64
	DownscaleStabilization  time.Duration
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
}

// DefaultSettings returns kube-controller-manager's defaults.
func DefaultSettings() Settings {
	return Settings{
		Tolerance:               replicas.DefaultTolerance,
		DownscaleStabilization:  5 * time.Minute,
		CPUInitializationPeriod: replicas.DefaultCPUInitializationPeriod,
		InitialReadinessDelay:   replicas.DefaultInitialReadinessDelay,
	}
}

// Validate reports every problem with the settings.
func (s *Settings) Validate() []error {
	var errs []error
	if s.Tolerance < 0 {
		errs = append(errs, errors.New("--horizontal-pod-autoscaler-tolerance must not be negative"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--horizontal-pod-autoscaler-downscale-stabilization", s.DownscaleStabilization},
		{"--horizontal-pod-autoscaler-cpu-initialization-period", s.CPUInitializationPeriod},
		{"--horizontal-pod-autoscaler-initial-readiness-delay", s.InitialReadinessDelay},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.name))
		}
	}
	return errs
}

// Memory is what an autoscaler carries from one evaluation to the next, as
// upstream keeps it in memory: the recommendations of the stabilization
// windows, the record of rescales the behavior policies count, what the
// proposal extensions remember, and the last good parameters of the
// ClusterProportional metrics. The zero Memory is a fresh start. A Memory
// is used by one evaluation at a time.
type Memory struct {
	Recommendations []behavior.Recommendation
	Events          behavior.ScaleEvents
	Extensions      ExtensionState
	// Proportional holds the last good parameters read from each referenced
	// ConfigMap, by "name/key" (so reordering spec.metrics keeps them apart).
	Proportional map[string]proportional.Params
	// Backtests are the forecasts' last backtests, by index in
	// spec.metrics (forecast.go).
	Backtests map[int]BacktestMemo
}

// Seed records the current replica count as the first recommendation when
// there is none yet (upstream's first reconcile).
func (h *Memory) Seed(current int32, now time.Time) {
	h.Recommendations = behavior.SeedRecommendations(h.Recommendations, current, now)
}

// Keep stores what a decision leaves for the next evaluation: the proposal
// extensions' state and, when the count was normalized, the recommendations.
func (h *Memory) Keep(d Decision, ext ExtensionState) {
	h.Extensions = ext
	if d.Outcome != nil {
		h.Recommendations = d.Outcome.Recommendations
	}
}

// Rescaled records a rescale from prev to next written at now (only after
// the write succeeded).
func (h *Memory) Rescaled(b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	h.Events = behavior.RecordScaleEvent(b, h.Events, prev, next, now)
}
