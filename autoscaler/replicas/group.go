package replicas

import (
	corev1 "k8s.io/api/core/v1"
)

// PodState is how a pod's sample enters the calculation.
type PodState string

// Pod states, as upstream's groupPods assigns them.
const (
	// PodCounted pods have a trusted sample that enters the first ratio.
	PodCounted PodState = "Counted"
	// PodUnready pods are Pending, or (cpu only) not yet trusted; their
	// samples are dropped, and they count at 0% on a scale-up.
	PodUnready PodState = "Unready"
	// PodMissing pods have no sample; they count at 100% of target on a
	// scale-down and at 0% on a scale-up.
	PodMissing PodState = "Missing"
	// PodIgnored pods are being deleted or have Failed; they never count.
	PodIgnored PodState = "Ignored"
)

// PodVerdict records how one pod was classified and why.
type PodVerdict struct {
	Name   string
	State  PodState
	Reason string
}

// Groups is the classification of a pod list against its samples.
type Groups struct {
	// Counted is the number of pods in state PodCounted.
	Counted int
	// Unready, Missing and Ignored list pod names in input order.
	Unready []string
	Missing []string
	Ignored []string
	// Verdicts has one entry per input pod, in input order.
	Verdicts []PodVerdict
}

// GroupPods classifies pods as upstream's groupPods does. The cpu readiness
// rules apply only when resource is cpu; for any other resource, and for
// Pods metrics (resource ""), a Running pod with a sample is counted.
//
// The order of the checks is the contract: deleting or Failed → ignored;
// Pending → unready; no sample → missing; then, for cpu only, a pod without a
// Ready condition or start time is unready; within the cpu initialization
// period a pod is unready if Ready=False or its sample was taken before one
// full window had passed since the Ready condition last changed; after that
// period a pod is unready only if Ready=False and it has never been ready
// (the condition changed within the initial readiness delay of the start).
func GroupPods(pods []Pod, samples Samples, resource corev1.ResourceName, timing PodTiming) Groups {
	g := Groups{Verdicts: make([]PodVerdict, 0, len(pods))}
	for _, p := range pods {
		v := classify(p, samples, resource, timing)
		g.Verdicts = append(g.Verdicts, v)
		switch v.State {
		case PodCounted:
			g.Counted++
		case PodUnready:
			g.Unready = append(g.Unready, p.Name)
		case PodMissing:
			g.Missing = append(g.Missing, p.Name)
		case PodIgnored:
			g.Ignored = append(g.Ignored, p.Name)
		}
	}
	return g
}

func classify(p Pod, samples Samples, resource corev1.ResourceName, timing PodTiming) PodVerdict {
	v := PodVerdict{Name: p.Name}
	switch {
	case p.Deleting:
		v.State, v.Reason = PodIgnored, "pod is being deleted"
		return v
	case p.Phase == corev1.PodFailed:
		v.State, v.Reason = PodIgnored, "pod has failed"
		return v
	case p.Phase == corev1.PodPending:
		v.State, v.Reason = PodUnready, "pod is pending"
		return v
	}
	s, ok := samples[p.Name]
	if !ok {
		v.State, v.Reason = PodMissing, "no sample for pod"
		return v
	}
	if resource == corev1.ResourceCPU {
		if reason, unready := cpuUnready(p, s, timing); unready {
			v.State, v.Reason = PodUnready, reason
			return v
		}
	}
	v.State, v.Reason = PodCounted, "sample counted"
	return v
}

// cpuUnready applies upstream's cpu readiness rules to a pod that has a
// sample; it returns a reason when the sample must not be trusted.
func cpuUnready(p Pod, s Sample, timing PodTiming) (string, bool) {
	if p.Ready == nil || p.StartTime == nil {
		return "no ready condition or start time", true
	}
	if p.StartTime.Add(timing.CPUInitializationPeriod).After(timing.Now) {
		if p.Ready.Status == corev1.ConditionFalse {
			return "not ready within the cpu initialization period", true
		}
		if s.Timestamp.Before(p.Ready.LastTransitionTime.Add(s.Window)) {
			return "sample window started before the last readiness change, within the cpu initialization period", true
		}
		return "", false
	}
	neverReady := p.StartTime.Add(timing.InitialReadinessDelay).After(p.Ready.LastTransitionTime)
	if p.Ready.Status == corev1.ConditionFalse && neverReady {
		return "not ready and never ready since start", true
	}
	return "", false
}
