package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateSchedulingSpec(t *testing.T) {
	good := ScheduleSpec{Cron: "0 8 * * 1-5", TimeZone: "Europe/Paris", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 5}
	with := func(f func(*ScheduleSpec)) ScheduleSpec {
		s := good
		f(&s)
		return s
	}
	period := func(v int32) *int32 { return &v }
	tests := []struct {
		name      string
		schedules []ScheduleSpec
		period    *int32
		want      []string // "field: detail part", in order
	}{
		{"valid", []ScheduleSpec{good, with(func(s *ScheduleSpec) { s.Cron, s.TimeZone = "@daily", "" })}, period(1), nil},
		{"bad cron names the field", []ScheduleSpec{good, with(func(s *ScheduleSpec) { s.Cron = "0 25 * * *" })}, nil,
			[]string{"spec.schedules[1].cron: Invalid value: \"0 25 * * *\""}},
		{"unknown time zone", []ScheduleSpec{with(func(s *ScheduleSpec) { s.TimeZone = "Mars/Olympus" })}, nil,
			[]string{"spec.schedules[0].timeZone: Invalid value: \"Mars/Olympus\": unknown time zone"}},
		{"Local is not a zone", []ScheduleSpec{with(func(s *ScheduleSpec) { s.TimeZone = "Local" })}, nil,
			[]string{"spec.schedules[0].timeZone"}},
		{"zero duration", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Duration.Duration = 0 })}, nil,
			[]string{"spec.schedules[0].duration: Invalid value: \"0s\": must be greater than zero"}},
		{"a duration over a year", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Duration.Duration = 367 * 24 * time.Hour })}, nil,
			[]string{"spec.schedules[0].duration: Invalid value: \"8808h0m0s\": must be at most 366 days"}},
		{"a ramp over a day", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Ramp = &metav1.Duration{Duration: 25 * time.Hour} })}, nil,
			[]string{"spec.schedules[0].ramp"}},
		{"negative ramp", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Ramp = &metav1.Duration{Duration: -time.Minute} })}, nil,
			[]string{"spec.schedules[0].ramp"}},
		{"minReplicas above maxReplicas", []ScheduleSpec{with(func(s *ScheduleSpec) { s.MinReplicas = 11 })}, nil,
			[]string{"spec.schedules[0].minReplicas: Invalid value: 11: must be less than or equal to spec.maxReplicas (10)"}},
		{"minReplicas zero", []ScheduleSpec{with(func(s *ScheduleSpec) { s.MinReplicas = 0 })}, nil,
			[]string{"spec.schedules[0].minReplicas"}},
		{"@every is not a time of day", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Cron = "@every 1h" })}, nil,
			[]string{"spec.schedules[0].cron: Invalid value: \"@every 1h\": @every"}},
		{"a zone inside the cron", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Cron = "CRON_TZ=Asia/Tokyo 0 8 * * *" })}, nil,
			[]string{"spec.schedules[0].cron: Invalid value: \"CRON_TZ=Asia/Tokyo 0 8 * * *\": must not set a time zone"}},
		{"seconds field rejected", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Cron = "0 0 8 * * *" })}, nil,
			[]string{"spec.schedules[0].cron"}},
		{"never fires", []ScheduleSpec{with(func(s *ScheduleSpec) { s.Cron = "0 0 30 2 *" })}, nil,
			[]string{"spec.schedules[0].cron: Invalid value: \"0 0 30 2 *\": never fires"}},
		{"every problem of one schedule", []ScheduleSpec{{Cron: "x", TimeZone: "Nowhere", MinReplicas: 20}}, nil,
			[]string{"spec.schedules[0].timeZone", "spec.schedules[0].cron", "spec.schedules[0].duration", "spec.schedules[0].minReplicas"}},
		{"sync period below the floor", nil, period(0), []string{"spec.syncPeriodSeconds: Invalid value: 0: must be between 1 and 3600 seconds"}},
		{"sync period above an hour", nil, period(3601), []string{"spec.syncPeriodSeconds"}},
		{"too many schedules", make([]ScheduleSpec, 21), nil, []string{"spec.schedules: Too many: 21"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := AutoscalerSpec{MaxReplicas: 10, Schedules: tc.schedules, SyncPeriodSeconds: tc.period}
			errs := ValidateSchedulingSpec(&spec, field.NewPath("spec"))
			if tc.name == "too many schedules" {
				errs = errs[:1]
			}
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to start with %q", i, errs[i].Error(), w)
				}
			}
		})
	}
}

// Hostile or malformed expressions never panic, and an accepted one fires
// after any time and in its zone.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 8 * * 1-5", "@daily", "*/5 * * * *", "0 0 29 2 *", "0-59/61 * * * *", "1,2,3 4-5 ? * SUN", "@every 1s", "CRON_TZ=UTC 0 * * * *", "0 0 31 4 *", "* * * * * *"} {
		f.Add(s, "Europe/Paris")
	}
	f.Fuzz(func(t *testing.T, expr, zone string) {
		loc, err := LoadTimeZone(zone)
		if err != nil {
			loc = time.UTC
		}
		s, err := ParseCron(expr, loc)
		if err != nil {
			return
		}
		from := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
		next := s.Next(from)
		if next.IsZero() || !next.After(from) || next.Location() != time.UTC {
			t.Errorf("%q in %s: next after %v is %v", expr, zone, from, next)
		}
	})
}
