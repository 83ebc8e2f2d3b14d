package evaluation

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Settings are the controller-wide settings an evaluation reads, with
// kube-controller-manager's flag names and defaults. ebbflow-autoscaler and
// `ebbflow simulate` register them alike.
type Settings struct {
	Tolerance               float64
	DownscaleStabilization  time.Duration
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
}

// DefaultSettings returns kube-controller-manager's defaults.
func DefaultSettings() Settings {
	return Settings{
		Tolerance:               replicas.DefaultTolerance,
		DownscaleStabilization:  5 * time.Minute,
		CPUInitializationPeriod: replicas.DefaultCPUInitializationPeriod,
		InitialReadinessDelay:   replicas.DefaultInitialReadinessDelay,
	}
}

// AddFlags registers the settings on fs.
func (s *Settings) AddFlags(fs *pflag.FlagSet) {
	fs.Float64Var(&s.Tolerance, "horizontal-pod-autoscaler-tolerance", s.Tolerance, "Minimum change (from 1.0) in the desired-to-actual metrics ratio for the autoscaler to consider scaling.")
	fs.DurationVar(&s.DownscaleStabilization, "horizontal-pod-autoscaler-downscale-stabilization", s.DownscaleStabilization, "Period for which autoscaler will look backwards and not scale down below any recommendation it made during that period.")
	fs.DurationVar(&s.CPUInitializationPeriod, "horizontal-pod-autoscaler-cpu-initialization-period", s.CPUInitializationPeriod, "Period after pod start when CPU samples might be skipped.")
	fs.DurationVar(&s.InitialReadinessDelay, "horizontal-pod-autoscaler-initial-readiness-delay", s.InitialReadinessDelay, "Period after pod start during which readiness changes will be treated as initial readiness.")
}

// Validate reports every problem with the settings.
func (s *Settings) Validate() []error {
	var errs []error
	if s.Tolerance < 0 {
		errs = append(errs, errors.New("--horizontal-pod-autoscaler-tolerance must not be negative"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"--horizontal-pod-autoscaler-downscale-stabilization", s.DownscaleStabilization},
		{"--horizontal-pod-autoscaler-cpu-initialization-period", s.CPUInitializationPeriod},
		{"--horizontal-pod-autoscaler-initial-readiness-delay", s.InitialReadinessDelay},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", d.name))
		}
	}
	return errs
}
