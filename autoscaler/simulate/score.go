package simulate

import (
	"math"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// Score measures a replay against the load it served: at each step the load
// needed ceil(load / per-pod target) ready pods (the largest over the
// metrics that have a per-pod target: Pods, Resource, ContainerResource and
// the AverageValue targets of Object and External metrics; a Value target
// states no per-pod load and is not scored).
type Score struct {
	// Scored is false when no metric has a per-pod target, or no step a
	// recorded load.
	Scored bool
	// ShortPodSeconds are the under-provisioned pod-seconds: the sum over
	// the steps of (needed − ready pods, when positive) × Step.
	ShortPodSeconds float64
	// ReplicaHours is the replay's (as Summary.ReplicaHours).
	ReplicaHours float64
	// Oracle is the same for the oracle.
	Oracle OracleScore
}

// OracleScore is the score of the oracle: an autoscaler that knows the
// future load, starts each pod PodStartup before it is needed and removes it
// as soon as it is not, within [minReplicas, maxReplicas]. It holds at step
// i the most pods needed over the steps [i, i + ceil(PodStartup/Step)] (0
// for a step without a recorded load), and is taken to have planned so
// before the replay started; it is short only where the load needs more
// than maxReplicas. It is the physical limit any autoscaler with that
// start-up can reach.
type OracleScore struct {
	ShortPodSeconds float64
	ReplicaHours    float64
}

// unitLoads returns, per metric of spec, the load one pod carries on target
// in milli-units (0 when the metric has no per-pod target). perPod holds the
// Resource metrics' (see perPodTarget).
func unitLoads(spec *evaluation.Spec, kinds []evaluation.MetricKind, perPod []float64) []float64 {
	out := make([]float64, len(spec.HPA.Metrics))
	for j, m := range spec.HPA.Metrics {
		switch {
		case isResource(m):
			out[j] = perPod[j]
		case kinds[j] == evaluation.PodsAverageValue:
			out[j] = float64(m.Pods.Target.AverageValue.MilliValue())
		case kinds[j] == evaluation.ObjectAverageValue:
			out[j] = float64(m.Object.Target.AverageValue.MilliValue())
		case kinds[j] == evaluation.ExternalAverageValue:
			out[j] = float64(m.External.Target.AverageValue.MilliValue())
		}
		if out[j] <= 0 || math.IsNaN(out[j]) || math.IsInf(out[j], 0) {
			out[j] = 0
		}
	}
	return out
}

// needed is the ready pods the recorded load of step i needs, -1 when no
// metric tells.
func needed(series []Series, units []float64, i int) int32 {
	n := int32(-1)
	for j, u := range units {
		v := series[j].Values[i]
		if u == 0 || v == Missing {
			continue
		}
		pods := math.Ceil(float64(max(v, 0))/u - 1e-9)
		n = max(n, int32(min(pods, math.MaxInt32)))
	}
	return n
}

// ScoreOf scores steps replayed every step with pods starting in startup,
// within [minReplicas, maxReplicas].
func ScoreOf(steps []Step, step, startup time.Duration, minReplicas, maxReplicas int32) Score {
	var s Score
	ahead := 0
	if startup > 0 {
		ahead = int((startup + step - 1) / step)
	}
	// window is a monotonic deque of step indexes for the maximum of
	// Needed over [i, i+ahead].
	window := make([]int, 0, ahead+1)
	next := 0
	for i, st := range steps {
		s.ReplicaHours += float64(st.Replicas) * step.Hours()
		for ; next < len(steps) && next <= i+ahead; next++ {
			for len(window) > 0 && steps[window[len(window)-1]].Needed <= steps[next].Needed {
				window = window[:len(window)-1]
			}
			window = append(window, next)
		}
		for window[0] < i {
			window = window[1:]
		}
		oracle := min(max(steps[window[0]].Needed, minReplicas, 0), maxReplicas)
		s.Oracle.ReplicaHours += float64(oracle) * step.Hours()
		if st.Needed < 0 {
			continue
		}
		s.Scored = true
		s.ShortPodSeconds += float64(max(st.Needed-st.Ready, 0)) * step.Seconds()
		s.Oracle.ShortPodSeconds += float64(max(st.Needed-maxReplicas, 0)) * step.Seconds()
	}
	return s
}
