package v1alpha1

import (
	"fmt"
	"strings"
	"time"
	// The IANA time zone database inside the binary: a schedule's timeZone
	// must mean the same in a distroless image, on any node and in
	// `ebbflow simulate`.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Longest cron expression and time zone name accepted (the CRD says the same).
const (
	maxCronLength     = 128
	maxTimeZoneLength = 64
)

// cronParser reads standard five-field expressions and the @ descriptors, as
// KEDA's cron scaler and kube-metrics-adapter's ScalingSchedule do.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a schedule's cron expression, read in loc. It rejects
// what the CRD cannot: a bad expression, @every (a delay from whenever the
// controller started, not a time of day) and a CRON_TZ= or TZ= prefix (the
// zone is spec.schedules[].timeZone), and an expression that never fires.
func ParseCron(expr string, loc *time.Location) (s *cron.SpecSchedule, err error) {
	switch trimmed := strings.TrimSpace(expr); {
	case trimmed == "":
		return nil, fmt.Errorf("must not be empty")
	case len(expr) > maxCronLength:
		return nil, fmt.Errorf("must be at most %d characters", maxCronLength)
	case strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ="):
		return nil, fmt.Errorf("must not set a time zone: use timeZone")
	case strings.HasPrefix(trimmed, "@every"):
		return nil, fmt.Errorf("@every is not a time of day: use a five-field expression")
	}
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("invalid cron expression: %v", p)
		}
	}()
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported cron expression")
	}
	spec.Location = loc
	// robfig/cron looks five years ahead; every valid date (29 February
	// included) fires within that.
	if spec.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("never fires (a date that does not exist?)")
	}
	return spec, nil
}

// LoadTimeZone returns the IANA time zone name ("" is UTC). "Local" is
// rejected: it would depend on the machine the controller runs on.
func LoadTimeZone(name string) (*time.Location, error) {
	switch {
	case name == "":
		return time.UTC, nil
	case len(name) > maxTimeZoneLength:
		return nil, fmt.Errorf("must be at most %d characters", maxTimeZoneLength)
	case name == "Local":
		return nil, fmt.Errorf("must be an IANA time zone name (Local depends on the machine)")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone (an IANA name such as Europe/Paris is expected)")
	}
	return loc, nil
}

// ValidateSchedulingSpec reports every problem with spec.schedules and
// spec.syncPeriodSeconds, each naming its field under fldPath (spec): what
// the CRD's schema and rules check, and what they cannot (the cron
// expression, the time zone). The controller reports these on the
// Autoscaler and ignores a bad schedule; `ebbflow simulate` refuses the spec.
func ValidateSchedulingSpec(spec *AutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := spec.SyncPeriodSeconds; p != nil && (*p < MinSyncPeriodSeconds || *p > MaxSyncPeriodSeconds) {
		errs = append(errs, field.Invalid(fldPath.Child("syncPeriodSeconds"), *p,
			fmt.Sprintf("must be between %d and %d seconds", MinSyncPeriodSeconds, MaxSyncPeriodSeconds)))
	}
	if len(spec.Schedules) > MaxSchedules {
		errs = append(errs, field.TooMany(fldPath.Child("schedules"), len(spec.Schedules), MaxSchedules))
	}
	for i := range spec.Schedules {
		errs = append(errs, ValidateSchedule(&spec.Schedules[i], spec.MaxReplicas, fldPath.Child("schedules").Index(i))...)
	}
	return errs
}

// ValidateSchedule reports every problem with one schedule at fldPath.
func ValidateSchedule(s *ScheduleSpec, maxReplicas int32, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	loc, err := LoadTimeZone(s.TimeZone)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("timeZone"), s.TimeZone, err.Error()))
		loc = time.UTC
	}
	if _, err := ParseCron(s.Cron, loc); err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("cron"), s.Cron, err.Error()))
	}
	switch d := s.Duration.Duration; {
	case d <= 0:
		errs = append(errs, field.Invalid(fldPath.Child("duration"), d.String(), "must be greater than zero"))
	case d > MaxScheduleDuration:
		errs = append(errs, field.Invalid(fldPath.Child("duration"), d.String(), "must be at most 366 days (8784h)"))
	}
	if s.Ramp != nil && (s.Ramp.Duration < 0 || s.Ramp.Duration > MaxScheduleRamp) {
		errs = append(errs, field.Invalid(fldPath.Child("ramp"), s.Ramp.Duration.String(), "must be between 0 and 24h"))
	}
	switch {
	case s.MinReplicas < 1:
		errs = append(errs, field.Invalid(fldPath.Child("minReplicas"), s.MinReplicas, "must be at least 1"))
	case s.MinReplicas > maxReplicas:
		errs = append(errs, field.Invalid(fldPath.Child("minReplicas"), s.MinReplicas,
			fmt.Sprintf("must be less than or equal to spec.maxReplicas (%d)", maxReplicas)))
	}
	return errs
}
