package replicas

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrNoExternalMetrics: an External metric returned no series (upstream's
// metrics client fails the same way).
var ErrNoExternalMetrics = errors.New("no metrics returned from external metrics API")

// ValueInput is what ObjectValue and ExternalValue need besides the value.
type ValueInput struct {
	// CurrentReplicas is the scale's spec.replicas.
	CurrentReplicas int32
	// Target is target.value in milli-units.
	Target     int64
	Tolerances Tolerances
	// Pods are the pods matched by the scale target's selector; only their
	// count of Running and Ready pods is used, and only when CurrentReplicas
	// is not zero and the ratio is outside tolerance.
	Pods      []Pod
	Timestamp time.Time
}

// ObjectValue proposes replicas for an Object metric with a Value target, as
// upstream's GetObjectMetricReplicas: ratio = value / target; from zero
// replicas the proposal is ceil(ratio) with no tolerance; otherwise, outside
// tolerance, ceil(ratio × ready pods), capped at MaxInt32.
//
// Errors: ErrInvalidTarget; ErrNoPods (wrapped) when the ready count is needed
// and Pods is empty.
func ObjectValue(value int64, in ValueInput) (Result, error) {
	return valueReplicas(value, false, in)
}

// ExternalValue proposes replicas for an External metric with a Value target,
// as upstream's GetExternalMetricReplicas: the series are summed (a positive
// overflow saturates at MaxInt64) and the sum is treated like ObjectValue's
// value.
//
// Errors: ErrNoExternalMetrics for no series, and those of ObjectValue.
func ExternalValue(values []int64, in ValueInput) (Result, error) {
	if len(values) == 0 {
		return Result{}, ErrNoExternalMetrics
	}
	var sum int64
	saturated := false
	for _, v := range values {
		if v > 0 && sum > math.MaxInt64-v {
			sum, saturated = math.MaxInt64, true
			break
		}
		sum += v
	}
	return valueReplicas(sum, saturated, in)
}

func valueReplicas(value int64, saturated bool, in ValueInput) (Result, error) {
	if in.Target <= 0 {
		return Result{}, ErrInvalidTarget
	}
	ratio := float64(value) / float64(in.Target)
	r := Result{
		Value:      value,
		UsageRatio: ratio,
		Timestamp:  in.Timestamp,
		Tolerances: in.Tolerances,
		Saturated:  saturated,
	}
	if in.CurrentReplicas == 0 {
		r.Replicas, r.Reason = int32(math.Ceil(ratio)), ReasonFromZero
		return r, nil
	}
	if in.Tolerances.Within(ratio) {
		r.Replicas, r.Reason = in.CurrentReplicas, ReasonWithinTolerance
		return r, nil
	}
	if len(in.Pods) == 0 {
		return Result{}, fmt.Errorf("unable to calculate ready pods: %w", ErrNoPods)
	}
	for _, p := range in.Pods {
		if p.readyAndRunning() {
			r.ReadyPods++
		}
	}
	r.Reason = ReasonProportional
	proposed := ratio * float64(r.ReadyPods)
	if proposed > math.MaxInt32 {
		r.Replicas, r.Saturated = math.MaxInt32, true
		return r, nil
	}
	r.Replicas = int32(math.Ceil(proposed))
	return r, nil
}

// PerPodInput is what ObjectAverageValue and ExternalAverageValue need
// besides the value.
type PerPodInput struct {
	// StatusReplicas is the scale's status.replicas (not spec.replicas).
	StatusReplicas int32
	// TargetAverage is target.averageValue in milli-units.
	TargetAverage int64
	Tolerances    Tolerances
	Timestamp     time.Time
}

// ObjectAverageValue proposes replicas for an Object metric with an
// AverageValue target, as upstream's GetObjectPerPodMetricReplicas: ratio =
// value / (target × status replicas); outside tolerance the proposal is
// ceil(value / target). Value in the result is ceil(value / status replicas).
//
// Errors: ErrInvalidTarget.
func ObjectAverageValue(value int64, in PerPodInput) (Result, error) {
	if in.TargetAverage <= 0 {
		return Result{}, ErrInvalidTarget
	}
	r := perPod(value, in)
	if r.Reason == ReasonTotalOverTarget {
		r.Replicas = int32(math.Ceil(float64(value) / float64(in.TargetAverage)))
	}
	r.Value = int64(math.Ceil(float64(value) / float64(in.StatusReplicas)))
	return r, nil
}

// ExternalAverageValue proposes replicas for an External metric with an
// AverageValue target, as upstream's GetExternalPerPodMetricReplicas: the
// series are summed (a sum that turns negative, by overflow or by negative
// series, saturates at MaxInt64, as upstream), then treated like
// ObjectAverageValue's value, with the proposal capped at MaxInt32 and the
// per-pod value at MaxInt64.
//
// Errors: ErrNoExternalMetrics for no series, ErrInvalidTarget.
func ExternalAverageValue(values []int64, in PerPodInput) (Result, error) {
	if len(values) == 0 {
		return Result{}, ErrNoExternalMetrics
	}
	if in.TargetAverage <= 0 {
		return Result{}, ErrInvalidTarget
	}
	var sum int64
	saturated := false
	for _, v := range values {
		sum += v
		if sum < 0 {
			sum, saturated = math.MaxInt64, true
			break
		}
	}
	r := perPod(sum, in)
	r.Saturated = saturated
	if r.Reason == ReasonTotalOverTarget {
		proposed := math.Ceil(float64(sum) / float64(in.TargetAverage))
		if proposed > float64(math.MaxInt32) {
			r.Replicas, r.Saturated = math.MaxInt32, true
		} else {
			r.Replicas = int32(proposed)
		}
	}
	if float64(sum) >= float64(math.MaxInt64) {
		r.Value = math.MaxInt64
	} else {
		r.Value = int64(math.Ceil(float64(sum) / float64(in.StatusReplicas)))
	}
	return r, nil
}

// perPod applies the tolerance of a per-pod target; Replicas stays at status
// replicas unless Reason is ReasonTotalOverTarget, which the caller completes.
func perPod(total int64, in PerPodInput) Result {
	ratio := float64(total) / (float64(in.TargetAverage) * float64(in.StatusReplicas))
	r := Result{
		Replicas:   in.StatusReplicas,
		UsageRatio: ratio,
		Timestamp:  in.Timestamp,
		Tolerances: in.Tolerances,
		Reason:     ReasonWithinTolerance,
	}
	if !in.Tolerances.Within(ratio) {
		r.Reason = ReasonTotalOverTarget
	}
	return r
}
