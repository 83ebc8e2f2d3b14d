// Package settings binds the controller-wide settings of an evaluation
// (evaluation.Settings) to kube-controller-manager's flag names, for
// ebbflow-autoscaler and `ebbflow simulate` alike: flag binding stays at the
// edge, out of the pure evaluation.
package settings

import (
	"github.com/spf13/pflag"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
)

// AddFlags registers s on fs, with s's values as the defaults.
func AddFlags(fs *pflag.FlagSet, s *evaluation.Settings) {
	fs.Float64Var(&s.Tolerance, "horizontal-pod-autoscaler-tolerance", s.Tolerance, "Minimum change (from 1.0) in the desired-to-actual metrics ratio for the autoscaler to consider scaling.")
	fs.DurationVar(&s.DownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", s.DownscaleStabilization, "Period for which autoscaler will look backwards and not scale down below any recommendation it made during that period.")
	fs.DurationVar(&s.CPUInitializationPeriod, "horizontal-pod-autoscaler-cpu-initialization-period", s.CPUInitializationPeriod, "Period after pod start when CPU samples might be skipped.")
	fs.DurationVar(&s.InitialReadinessDelay, "horizontal-pod-autoscaler-initial-readiness-delay", s.InitialReadinessDelay, "Period after pod start during which readiness changes will be treated as initial readiness.")
}
