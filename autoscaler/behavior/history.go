package behavior

import (
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Recommendation is one unstabilized replica recommendation and when it was
// made.
type Recommendation struct {
	Replicas  int32
	Timestamp time.Time
}

// ScaleEvent is one past rescale in one direction.
type ScaleEvent struct {
	// Change is the absolute number of replicas added or removed.
	Change    int32
	Timestamp time.Time
	// Outdated marks an event older than the longest policy period when it
	// was last checked; such an entry is reused for the next event. The mark
	// is sticky, as upstream's.
	Outdated bool
}

// ScaleEvents is the record of past rescales, per direction.
type ScaleEvents struct {
	Up   []ScaleEvent
	Down []ScaleEvent
}

// SeedRecommendations returns history unchanged when it has entries, and
// otherwise a history holding the current replica count at now, as upstream
// records on the first reconcile of an autoscaler. Call it before metrics are
// computed, on every reconcile.
func SeedRecommendations(history []Recommendation, current int32, now time.Time) []Recommendation {
	if len(history) > 0 {
		return history
	}
	return []Recommendation{{Replicas: current, Timestamp: now}}
}

// RecordScaleEvent returns events with a rescale from prev to next recorded,
// as upstream's storeScaleEvent: events older than the longest policy period
// of that direction are marked outdated, and the last outdated entry is
// replaced by the new event (else it is appended). A nil behavior records
// nothing. Call it only after the rescale succeeded.
//
// The input is not modified; the changed direction is a new slice.
func RecordScaleEvent(b *autoscalingv2.HorizontalPodAutoscalerBehavior, events ScaleEvents, prev, next int32, now time.Time) ScaleEvents {
	if b == nil {
		return events
	}
	b = Default(b, 0)
	if next > prev {
		events.Up = record(events.Up, longestPeriod(b.ScaleUp), next-prev, now)
	} else {
		events.Down = record(events.Down, longestPeriod(b.ScaleDown), prev-next, now)
	}
	return events
}

func record(events []ScaleEvent, longest int32, change int32, now time.Time) []ScaleEvent {
	out := slices.Clone(events)
	cutoff := now.Add(-time.Second * time.Duration(longest))
	reuse := -1
	for i := range out {
		if out[i].Timestamp.Before(cutoff) {
			out[i].Outdated = true
		}
		if out[i].Outdated {
			reuse = i
		}
	}
	e := ScaleEvent{Change: change, Timestamp: now}
	if reuse >= 0 {
		out[reuse] = e
		return out
	}
	return append(out, e)
}

func longestPeriod(rules *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}

// changeInPeriod sums the changes of events strictly newer than
// now − periodSeconds.
func changeInPeriod(periodSeconds int32, events []ScaleEvent, now time.Time) int32 {
	cutoff := now.Add(-time.Second * time.Duration(periodSeconds))
	var sum int32
	for _, e := range events {
		if e.Timestamp.After(cutoff) {
			sum += e.Change
		}
	}
	return sum
}
