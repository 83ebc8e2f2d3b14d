package behavior

import (
	"slices"
	"time"
)

// stabilizeDown is upstream's stabilizeRecommendation (no behavior): the
// maximum of desired and every recommendation not older than window (a
// recommendation exactly at the cutoff counts). desired is recorded at now,
// reusing the last entry older than the window if there is one.
func stabilizeDown(history []Recommendation, desired int32, window time.Duration, now time.Time) (int32, []Recommendation) {
	cutoff := now.Add(-window)
	highest := desired
	reuse := -1
	for i, rec := range history {
		if rec.Timestamp.Before(cutoff) {
			reuse = i
		} else if rec.Replicas > highest {
			highest = rec.Replicas
		}
	}
	return highest, remember(history, reuse, Recommendation{Replicas: desired, Timestamp: now})
}

// windows are the stabilization windows of both directions, in seconds.
type windows struct {
	up, down int32
}

// stabilizeBoth is upstream's stabilizeRecommendationWithBehaviors: the
// recommendation is current raised to the lowest recommendation within the
// scale-up window and lowered to the highest within the scale-down window
// (windows are open: a recommendation exactly at a cutoff does not count).
// desired is recorded at now, reusing the last entry older than both windows.
func stabilizeBoth(history []Recommendation, current, desired int32, w windows, now time.Time) (int32, []Recommendation) {
	upCutoff := now.Add(-time.Second * time.Duration(w.up))
	downCutoff := now.Add(-time.Second * time.Duration(w.down))
	lowestUp, highestDown := desired, desired
	reuse := -1
	for i, rec := range history {
		if rec.Timestamp.After(upCutoff) {
			lowestUp = min(lowestUp, rec.Replicas)
		}
		if rec.Timestamp.After(downCutoff) {
			highestDown = max(highestDown, rec.Replicas)
		}
		if rec.Timestamp.Before(upCutoff) && rec.Timestamp.Before(downCutoff) {
			reuse = i
		}
	}
	recommendation := current
	if recommendation < lowestUp {
		recommendation = lowestUp
	}
	if recommendation > highestDown {
		recommendation = highestDown
	}
	return recommendation, remember(history, reuse, Recommendation{Replicas: desired, Timestamp: now})
}

// remember returns a copy of history with rec stored at index reuse, or
// appended when reuse is negative.
func remember(history []Recommendation, reuse int, rec Recommendation) []Recommendation {
	out := slices.Clone(history)
	if reuse >= 0 {
		out[reuse] = rec
		return out
	}
	return append(out, rec)
}
