package replicas

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// DefaultTolerance is kube-controller-manager's default
// --horizontal-pod-autoscaler-tolerance.
const DefaultTolerance = 0.1

// Tolerances are the usage-ratio tolerances below and above 1.0 within which a
// metric proposes no change.
type Tolerances struct {
	// ScaleDown is how far below 1.0 the ratio may fall without a change.
	ScaleDown float64
	// ScaleUp is how far above 1.0 the ratio may rise without a change.
	ScaleUp float64
}

// UniformTolerances returns Tolerances with the same value in both directions.
func UniformTolerances(t float64) Tolerances {
	return Tolerances{ScaleDown: t, ScaleUp: t}
}

// TolerancesFor returns the tolerances in force for an autoscaler: global in
// both directions, overridden per direction by behavior.scaleDown.tolerance
// and behavior.scaleUp.tolerance when set (GA in v1.37). A nil behavior
// yields the global value in both directions.
func TolerancesFor(global float64, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior) Tolerances {
	t := UniformTolerances(global)
	if behavior == nil {
		return t
	}
	if behavior.ScaleDown != nil && behavior.ScaleDown.Tolerance != nil {
		t.ScaleDown = behavior.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	if behavior.ScaleUp != nil && behavior.ScaleUp.Tolerance != nil {
		t.ScaleUp = behavior.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	return t
}

// Within reports whether ratio lies in the closed band
// [1-ScaleDown, 1+ScaleUp]. NaN is never within.
func (t Tolerances) Within(ratio float64) bool {
	return 1.0-t.ScaleDown <= ratio && ratio <= 1.0+t.ScaleUp
}

// String renders the tolerances as percentages, as upstream logs them.
func (t Tolerances) String() string {
	return fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", t.ScaleDown*100, t.ScaleUp*100)
}
