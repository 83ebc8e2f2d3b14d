package fakeapp

import "time"

// PerPod divides a total rate evenly among n pods. With no pods nobody serves
// the traffic and the per-pod rate is 0.
func PerPod(total float64, n int) float64 {
	if n <= 0 || total <= 0 {
		return 0
	}
	return total / float64(n)
}

// Increment returns how much a counter growing at rate per second advances in
// dt. Negative rates and durations count as 0, so counters never go down.
func Increment(rate float64, dt time.Duration) float64 {
	if rate <= 0 || dt <= 0 {
		return 0
	}
	return rate * dt.Seconds()
}

// QueueStep returns the queue depth after dt, starting from depth, when
// producers add produce messages per second and each of workers pods consumes
// consumePerPod messages per second. The depth never goes below 0.
func QueueStep(depth, produce, consumePerPod float64, workers int, dt time.Duration) float64 {
	if dt <= 0 {
		return max(depth, 0)
	}
	consume := consumePerPod * float64(max(workers, 0))
	next := depth + (max(produce, 0)-max(consume, 0))*dt.Seconds()
	return max(next, 0)
}
