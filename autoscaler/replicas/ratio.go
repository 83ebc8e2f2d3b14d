package replicas

import (
	"errors"
)

// ErrNoMatchingMetrics is returned when no sample belongs to a pod with a
// known, non-zero request, so utilization has no denominator.
var ErrNoMatchingMetrics = errors.New("no metrics returned matched known pods")

// Utilization is the outcome of comparing resource usage with requests.
type Utilization struct {
	// Ratio is Percent / target.
	Ratio float64
	// Percent is Σ usage × 100 / Σ requests, truncated to an integer.
	Percent int32
	// RawAverage is Σ usage / number of pods summed, in milli-units.
	RawAverage int64
}

// UtilizationRatio computes utilization over the pods that have both a sample
// and a request (samples of unknown pods are skipped), exactly as upstream:
// the percentage is truncated to int32 before the ratio is taken.
func UtilizationRatio(values map[string]int64, requests map[string]int64, targetPercent int32) (Utilization, error) {
	var usage, requested, n int64
	for pod, v := range values {
		r, ok := requests[pod]
		if !ok {
			continue
		}
		usage += v
		requested += r
		n++
	}
	if requested == 0 {
		return Utilization{}, ErrNoMatchingMetrics
	}
	percent := int32((usage * 100) / requested)
	return Utilization{
		Ratio:      float64(percent) / float64(targetPercent),
		Percent:    percent,
		RawAverage: usage / n,
	}, nil
}

// AverageRatio computes the integer average of values and its ratio to
// target, exactly as upstream: the average is truncated before the ratio is
// taken. values must not be empty.
func AverageRatio(values map[string]int64, target int64) (ratio float64, average int64) {
	var total int64
	for _, v := range values {
		total += v
	}
	average = total / int64(len(values))
	return float64(average) / float64(target), average
}
