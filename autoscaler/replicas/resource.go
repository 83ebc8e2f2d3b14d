package replicas

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// UtilizationInput is what ResourceUtilization needs for a Resource or
// ContainerResource metric with a Utilization target.
type UtilizationInput struct {
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// TargetUtilization is averageUtilization, in percent of request.
	TargetUtilization int32
	Resource          corev1.ResourceName
	// Container names the container for ContainerResource; "" for Resource.
	Container  string
	Tolerances Tolerances
	// Pods are all pods matched by the scale target's selector.
	Pods []Pod
	// Samples are the per-pod usages in milli-units.
	Samples Samples
	Timing  PodTiming
	// Timestamp is the metric timestamp, echoed in the result.
	Timestamp time.Time
}

// ResourceUtilization proposes replicas for a Utilization target, as
// upstream's GetResourceReplicas: pods are grouped (GroupPods), utilization is
// computed over trusted samples, and when pods were missing or unready on a
// scale-up the ratio is recomputed conservatively. On a scale-down a missing
// pod counts at max(100, target)% of its request.
//
// Errors: ErrInvalidTarget, ErrNoPods, ErrNoUsableMetrics,
// ErrNoMatchingMetrics, or a missing-request error. Samples is not modified.
func ResourceUtilization(in UtilizationInput) (Result, error) {
	if in.TargetUtilization <= 0 {
		return Result{}, ErrInvalidTarget
	}
	groups, values, err := trustedSamples(in.Pods, in.Samples, in.Resource, in.Timing)
	if err != nil {
		return Result{}, err
	}
	requests, err := Requests(in.Pods, in.Resource, in.Container)
	if err != nil {
		return Result{}, err
	}
	u, err := UtilizationRatio(values, requests, in.TargetUtilization)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Utilization: u.Percent,
		Value:       u.RawAverage,
		UsageRatio:  u.Ratio,
		Timestamp:   in.Timestamp,
		Tolerances:  in.Tolerances,
		Groups:      &groups,
	}
	fallbackPercent := int64(max(100, in.TargetUtilization))
	s := podScale{
		current: in.CurrentReplicas,
		tol:     in.Tolerances,
		groups:  groups,
		values:  values,
		ratio:   u.Ratio,
		recompute: func(v map[string]int64) (float64, error) {
			again, err := UtilizationRatio(v, requests, in.TargetUtilization)
			return again.Ratio, err
		},
		missingOnScaleDown: func(pod string) int64 { return requests[pod] * fallbackPercent / 100 },
	}
	if err := s.settle(&r); err != nil {
		return Result{}, err
	}
	return r, nil
}

// AverageInput is what PodAverage needs for a Pods metric, or a Resource /
// ContainerResource metric with an AverageValue target.
type AverageInput struct {
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// TargetAverage is averageValue in milli-units.
	TargetAverage int64
	// Resource is the resource name for Resource/ContainerResource metrics
	// (cpu readiness rules apply to cpu) and "" for Pods metrics.
	Resource   corev1.ResourceName
	Tolerances Tolerances
	// Pods are all pods matched by the scale target's selector.
	Pods []Pod
	// Samples are the per-pod values in milli-units.
	Samples   Samples
	Timing    PodTiming
	Timestamp time.Time
}

// PodAverage proposes replicas for a per-pod average value target, as
// upstream's calcPlainMetricReplicas: the ratio is the integer average of the
// trusted samples over the target, and on a scale-down a missing pod counts
// at exactly the target. Samples of pods outside the pod list are averaged
// in, as upstream does.
//
// Errors: ErrInvalidTarget, ErrNoPods, ErrNoUsableMetrics. Samples is not
// modified.
func PodAverage(in AverageInput) (Result, error) {
	if in.TargetAverage <= 0 {
		return Result{}, ErrInvalidTarget
	}
	groups, values, err := trustedSamples(in.Pods, in.Samples, in.Resource, in.Timing)
	if err != nil {
		return Result{}, err
	}
	ratio, average := AverageRatio(values, in.TargetAverage)
	r := Result{
		Value:      average,
		UsageRatio: ratio,
		Timestamp:  in.Timestamp,
		Tolerances: in.Tolerances,
		Groups:     &groups,
	}
	s := podScale{
		current: in.CurrentReplicas,
		tol:     in.Tolerances,
		groups:  groups,
		values:  values,
		ratio:   ratio,
		recompute: func(v map[string]int64) (float64, error) {
			again, _ := AverageRatio(v, in.TargetAverage)
			return again, nil
		},
		missingOnScaleDown: func(string) int64 { return in.TargetAverage },
	}
	if err := s.settle(&r); err != nil {
		return Result{}, err
	}
	return r, nil
}
