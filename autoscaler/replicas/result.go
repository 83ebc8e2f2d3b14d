package replicas

import (
	"errors"
	"time"
)

// Errors returned by the calculations. Callers may match them with errors.Is.
var (
	// ErrNoPods: the scale target's selector matched no pod.
	ErrNoPods = errors.New("no pods returned by selector while calculating replica count")
	// ErrNoUsableMetrics: after dropping ignored and unready pods no sample is left.
	ErrNoUsableMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
	// ErrInvalidTarget: a target is zero or negative (upstream's API validation
	// forbids this; here it is an error instead of a NaN or infinite ratio).
	ErrInvalidTarget = errors.New("invalid target: must be positive")
)

// Reason says which rule produced Result.Replicas.
type Reason string

// Reasons, in the order the rules are tried.
const (
	// ReasonWithinTolerance: the usage ratio is within tolerance; keep current.
	ReasonWithinTolerance Reason = "WithinTolerance"
	// ReasonProportional: replicas = ceil(ratio × pods counted).
	ReasonProportional Reason = "Proportional"
	// ReasonRecomputedWithinTolerance: after counting missing/unready pods
	// conservatively the ratio is within tolerance; keep current.
	ReasonRecomputedWithinTolerance Reason = "RecomputedWithinTolerance"
	// ReasonRecomputedDirectionFlip: the conservative ratio points the other
	// way than the first ratio; keep current.
	ReasonRecomputedDirectionFlip Reason = "RecomputedDirectionFlip"
	// ReasonRecomputedCountFlip: the conservative replica count would move
	// against the ratio's direction; keep current.
	ReasonRecomputedCountFlip Reason = "RecomputedCountFlip"
	// ReasonRecomputed: replicas = ceil(conservative ratio × pods counted).
	ReasonRecomputed Reason = "Recomputed"
	// ReasonFromZero: current replicas are zero; replicas = ceil(ratio), with
	// no tolerance (Object and External Value targets).
	ReasonFromZero Reason = "FromZero"
	// ReasonTotalOverTarget: replicas = ceil(total / per-pod target)
	// (Object and External AverageValue targets).
	ReasonTotalOverTarget Reason = "TotalOverTarget"
)

// Describe returns a sentence that explains the reason to a person.
func (r Reason) Describe() string {
	switch r {
	case ReasonWithinTolerance:
		return "usage ratio within tolerance, keeping current replicas"
	case ReasonProportional:
		return "replicas scaled in proportion to the usage ratio"
	case ReasonRecomputedWithinTolerance:
		return "after counting missing and unready pods conservatively the usage ratio is within tolerance, keeping current replicas"
	case ReasonRecomputedDirectionFlip:
		return "counting missing and unready pods conservatively reverses the scale direction, keeping current replicas"
	case ReasonRecomputedCountFlip:
		return "the conservative replica count moves against the usage ratio, keeping current replicas"
	case ReasonRecomputed:
		return "replicas scaled in proportion to the usage ratio with missing and unready pods counted conservatively"
	case ReasonFromZero:
		return "scaling from zero replicas to the rounded-up usage ratio"
	case ReasonTotalOverTarget:
		return "replicas set to the total divided by the per-pod target"
	}
	return string(r)
}

// Result is one metric's replica proposal and everything needed to explain it.
type Result struct {
	// Replicas is the proposal.
	Replicas int32
	// Utilization is the average utilization in percent of request
	// (Utilization targets only; zero otherwise).
	Utilization int32
	// Value is the current metric value in milli-units, as upstream reports it
	// in status: the raw per-pod average (Resource), the per-pod average
	// (Pods, and Object/External AverageValue), or the value itself
	// (Object/External Value; the sum of all series for External).
	Value int64
	// UsageRatio is the first usage ratio, before any recomputation.
	UsageRatio float64
	// Timestamp is the metric timestamp the caller passed in.
	Timestamp time.Time
	// Reason is the rule that produced Replicas.
	Reason Reason
	// Tolerances are the tolerances applied.
	Tolerances Tolerances
	// Groups is the pod classification (Resource and Pods metrics only).
	Groups *Groups
	// ReadyPods is the number of ready pods multiplied by the ratio
	// (Object and External Value targets with current replicas > 0).
	ReadyPods int64
	// Recomputed is true when missing or unready pods forced a second,
	// conservative ratio; RecomputedRatio is that ratio and CountedPods the
	// number of samples it was computed over.
	Recomputed      bool
	RecomputedRatio float64
	CountedPods     int
	// Saturated is true when the replica count or value was capped at the
	// int32/int64 maximum.
	Saturated bool
}
