package replicas

import (
	"math"

	corev1 "k8s.io/api/core/v1"
)

// podScale holds what the pod-based rules (Resource and Pods metrics) need
// once the first ratio is known.
type podScale struct {
	current int32
	tol     Tolerances
	groups  Groups
	// values are the samples left after dropping ignored and unready pods; it
	// is owned by podScale and filled in place on recomputation.
	values map[string]int64
	ratio  float64
	// recompute computes the ratio again over filled-in values.
	recompute func(values map[string]int64) (float64, error)
	// missingOnScaleDown is the value a missing pod counts at on a scale-down.
	missingOnScaleDown func(pod string) int64
}

// usableValues copies the sample values, dropping ignored and unready pods.
// Samples of pods absent from the pod list stay, as upstream keeps them.
// trustedSamples groups pods (GroupPods) and returns the samples that count,
// failing with ErrNoPods or ErrNoUsableMetrics as upstream does, in that order.
func trustedSamples(pods []Pod, samples Samples, res corev1.ResourceName, timing PodTiming) (Groups, map[string]int64, error) {
	if len(pods) == 0 {
		return Groups{}, nil, ErrNoPods
	}
	groups := GroupPods(pods, samples, res, timing)
	values := usableValues(samples, groups)
	if len(values) == 0 {
		return Groups{}, nil, ErrNoUsableMetrics
	}
	return groups, values, nil
}

func usableValues(samples Samples, g Groups) map[string]int64 {
	out := make(map[string]int64, len(samples))
	for name, s := range samples {
		out[name] = s.Value
	}
	for _, name := range g.Ignored {
		delete(out, name)
	}
	for _, name := range g.Unready {
		delete(out, name)
	}
	return out
}

// settle applies the tolerance and conservative-recomputation rules and
// fills the replica fields of r.
func (s podScale) settle(r *Result) error {
	scaleUpWithUnready := len(s.groups.Unready) > 0 && s.ratio > 1.0
	if !scaleUpWithUnready && len(s.groups.Missing) == 0 {
		r.CountedPods = s.groups.Counted
		if s.tol.Within(s.ratio) {
			r.Replicas, r.Reason = s.current, ReasonWithinTolerance
			return nil
		}
		r.Replicas = int32(math.Ceil(s.ratio * float64(s.groups.Counted)))
		r.Reason = ReasonProportional
		return nil
	}
	s.fill(scaleUpWithUnready)
	newRatio, err := s.recompute(s.values)
	if err != nil {
		return err
	}
	r.Recomputed, r.RecomputedRatio, r.CountedPods = true, newRatio, len(s.values)
	r.Replicas, r.Reason = s.recomputedReplicas(newRatio)
	return nil
}

// fill counts missing pods at the scale-down fallback (ratio < 1) or at zero
// (ratio > 1), and unready pods at zero on a scale-up.
func (s podScale) fill(scaleUpWithUnready bool) {
	if len(s.groups.Missing) > 0 {
		switch {
		case s.ratio < 1.0:
			for _, name := range s.groups.Missing {
				s.values[name] = s.missingOnScaleDown(name)
			}
		case s.ratio > 1.0:
			for _, name := range s.groups.Missing {
				s.values[name] = 0
			}
		}
	}
	if scaleUpWithUnready {
		for _, name := range s.groups.Unready {
			s.values[name] = 0
		}
	}
}

func (s podScale) recomputedReplicas(newRatio float64) (int32, Reason) {
	if s.tol.Within(newRatio) {
		return s.current, ReasonRecomputedWithinTolerance
	}
	if (s.ratio < 1.0 && newRatio > 1.0) || (s.ratio > 1.0 && newRatio < 1.0) {
		return s.current, ReasonRecomputedDirectionFlip
	}
	n := int32(math.Ceil(newRatio * float64(len(s.values))))
	if (newRatio < 1.0 && n > s.current) || (newRatio > 1.0 && n < s.current) {
		return s.current, ReasonRecomputedCountFlip
	}
	return n, ReasonRecomputed
}
