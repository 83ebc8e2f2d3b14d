package simulate

import "time"

// Summary describes a replay in a few figures.
type Summary struct {
	// ScaleEvents counts the rescales (ScaleUps + ScaleDowns).
	ScaleEvents int
	ScaleUps    int
	ScaleDowns  int
	MinReplicas int32
	MaxReplicas int32
	// ReplicaHours is the sum over the steps of the replicas held for one
	// step.
	ReplicaHours float64
	// UnderProvisioned is the time during which some metric's usage ratio
	// exceeded the scale-up tolerance (a step counts for Step).
	UnderProvisioned time.Duration
	// FailedSteps counts evaluations whose metrics allowed no decision.
	FailedSteps int
	// Score is the replay's and the oracle's provisioning against the load
	// (set by Run).
	Score Score
}

// Summarize computes the summary of steps taken every step.
func Summarize(steps []Step, step time.Duration) Summary {
	var s Summary
	for i, st := range steps {
		if i == 0 || st.Replicas < s.MinReplicas {
			s.MinReplicas = st.Replicas
		}
		if i == 0 || st.Replicas > s.MaxReplicas {
			s.MaxReplicas = st.Replicas
		}
		switch {
		case st.Rescaled && st.Replicas > st.Current:
			s.ScaleUps++
		case st.Rescaled && st.Replicas < st.Current:
			s.ScaleDowns++
		}
		s.ReplicaHours += float64(st.Replicas) * step.Hours()
		if st.UnderProvisioned {
			s.UnderProvisioned += step
		}
		if st.Failed {
			s.FailedSteps++
		}
	}
	s.ScaleEvents = s.ScaleUps + s.ScaleDowns
	return s
}
