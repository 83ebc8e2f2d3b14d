package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of spec.schedules and spec.syncPeriodSeconds.
const (
	// MaxSchedules is the most schedules an Autoscaler may list.
	MaxSchedules = 20
	// MaxScheduleDuration and MaxScheduleRamp bound a schedule's duration
	// and ramp (the cron library looks five years ahead; a floor longer than
	// a year is a minReplicas).
	MaxScheduleDuration = 366 * 24 * time.Hour
	MaxScheduleRamp     = 24 * time.Hour
	// MinSyncPeriodSeconds and MaxSyncPeriodSeconds bound
	// spec.syncPeriodSeconds (upstream's KEP-6003 shape: whole seconds, no
	// sub-second periods, at most an hour).
	MinSyncPeriodSeconds = 1
	MaxSyncPeriodSeconds = 3600
)

// ScheduleSpec is a floor for a known event: from each time its cron
// expression fires (in timeZone) and for duration, the autoscaler keeps at
// least minReplicas; over ramp before that time the floor rises linearly from
// spec.minReplicas, so the pods are started and ready when the event begins.
// The floor raises the combined proposal of the metrics before the behaviors
// (a rise follows the scale-up rules; the release at the end comes down
// through the scale-down stabilization window and policies) and never goes
// above spec.maxReplicas. Overlapping schedules take the largest floor.
//
// +kubebuilder:validation:XValidation:rule="duration(self.duration) > duration('0s') && duration(self.duration) <= duration('8784h')",message="must be greater than zero and at most 366 days",fieldPath=".duration",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.ramp) || (duration(self.ramp) >= duration('0s') && duration(self.ramp) <= duration('24h'))",message="must be between 0 and 24h",fieldPath=".ramp",reason=FieldValueInvalid
type ScheduleSpec struct {
	// name names the schedule in conditions, events and decision records
	// (default: schedules[i]).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// cron is when the event starts: a standard five-field cron expression
	// (minute hour day-of-month month day-of-week) or @yearly, @monthly,
	// @weekly, @daily, @hourly, read in timeZone (parsed as KEDA's cron
	// scaler does; @every and a CRON_TZ= prefix are rejected: use timeZone).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Cron string `json:"cron"`

	// timeZone is the IANA time zone the cron expression is read in, e.g.
	// Europe/Paris (default UTC). Across daylight saving changes the local
	// time holds (08:00 stays 08:00); a local time the change skips (02:30
	// in Europe/Paris on the spring day) does not fire that day, and one it
	// repeats fires twice (both occurrences then hold the floor): avoid the
	// hour of the change.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`

	// duration is how long the floor holds after each start (> 0, at most
	// 366 days).
	// +required
	Duration metav1.Duration `json:"duration"`

	// minReplicas is the floor while the schedule is active (at least 1, at
	// most spec.maxReplicas).
	// +required
	// +kubebuilder:validation:Minimum=1
	MinReplicas int32 `json:"minReplicas"`

	// ramp (at most 24h) starts raising the floor this long before each
	// start: at time t
	// within [start-ramp, start) the floor is spec.minReplicas +
	// ceil((minReplicas - spec.minReplicas) × (t - (start-ramp)) / ramp), so
	// it reaches minReplicas at start. Unset or 0: the floor steps up at
	// start. Set it to about the pods' start-up time so they are ready when
	// the event begins.
	// +optional
	Ramp *metav1.Duration `json:"ramp,omitempty"`
}
