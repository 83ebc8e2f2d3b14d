package evaluation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// MetricOptions are ebbflow's per-metric options.
type MetricOptions struct {
	// Activation is the metric's activation threshold, if set.
	Activation *resource.Quantity
	// MissingAsZero reads an empty answer as the value 0.
	MissingAsZero bool
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
}

// FromAutoscaler returns the evaluation's view of an Autoscaler's spec. The
// result shares nothing mutable with spec.
func FromAutoscaler(spec *v1alpha1.AutoscalerSpec) Spec {
	return Spec{
		HPA:           v1alpha1.ToHPASpec(spec),
		Extensions:    ExtensionsOf(spec),
		MetricOptions: MetricOptionsOf(spec.Metrics),
		Proportional:  ProportionalOf(spec.Metrics),
	}
}

// MinReplicas is spec.minReplicas, 1 when unset.
func MinReplicas(spec *autoscalingv2.HorizontalPodAutoscalerSpec) int32 {
	if spec.MinReplicas != nil {
		return *spec.MinReplicas
	}
	return 1
}

// Extensions reads the extensions an Autoscaler's spec sets, with their
// defaults (a fallback without policy holds).
func ExtensionsOf(spec *v1alpha1.AutoscalerSpec) Extensions {
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

// MetricOptionsOf returns the options of the HPA metrics among metrics, in
// the order of v1alpha1.HPAMetrics.
func MetricOptionsOf(metrics []v1alpha1.MetricSpec) []MetricOptions {
	var out []MetricOptions
	for _, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType {
			continue
		}
		out = append(out, MetricOptions{Activation: m.Activation, MissingAsZero: m.TreatMissingAs == v1alpha1.MissingAsZero})
	}
	return out
}

// ProportionalOf returns the ClusterProportional metrics with their index.
func ProportionalOf(metrics []v1alpha1.MetricSpec) []ProportionalSource {
	var out []ProportionalSource
	for i, m := range metrics {
		if m.Type == v1alpha1.ClusterProportionalMetricSourceType && m.ClusterProportional != nil {
			out = append(out, ProportionalSource{Index: i, Source: *m.ClusterProportional})
		}
	}
	return out
}
