package evaluation

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// StageSchedule names the schedules' floor in decision records.
const StageSchedule = "Schedule"

// ConditionSchedule says whether a schedule holds the floor: True while one
// is active (reason ScheduleActive), False otherwise (NoScheduleActive);
// reason InvalidSchedule when a schedule of the spec is invalid (it is
// ignored; the others apply).
const ConditionSchedule autoscalingv2.HorizontalPodAutoscalerConditionType = "Schedule"

// chainLimit bounds how many back-to-back occurrences Until follows.
const chainLimit = 16

// Schedule is one compiled spec.schedules entry.
type Schedule struct {
	// Name names it (spec.schedules[i].name, else "schedules[i]").
	Name string
	// Cron fires at each start (in its time zone); nil when Err is set.
	Cron cron.Schedule
	// Duration is how long the floor holds after a start; Ramp how long
	// before a start it begins to rise.
	Duration, Ramp time.Duration
	// MinReplicas is the floor while active.
	MinReplicas int32
	// Err is the schedule's problem, naming its field; such a schedule is
	// ignored and reported.
	Err error
}

// Floor is the floor of the schedules at one time.
type Floor struct {
	// Replicas is the largest floor of the active schedules (0: none).
	Replicas int32
	// Schedule names the schedule that sets it (the first listed on ties).
	Schedule string
	// Ramping is true while that schedule's floor is still rising to its
	// minReplicas before Start.
	Ramping bool
	// Start and Until bound the occurrence that sets the floor (Until
	// follows back-to-back occurrences).
	Start, Until time.Time
	// NextChange is the earliest time after now at which the floor may
	// change (a ramp's next step, a start, an end); zero when no schedule
	// will ever fire.
	NextChange time.Time
	// Problems are the invalid schedules' errors.
	Problems []string
}

// compileSchedules reads spec.schedules, each validated by
// v1alpha1.ValidateSchedule.
func compileSchedules(spec *v1alpha1.AutoscalerSpec) []Schedule {
	if len(spec.Schedules) == 0 {
		return nil
	}
	out := make([]Schedule, 0, len(spec.Schedules))
	for i, s := range spec.Schedules {
		path := field.NewPath("spec", "schedules").Index(i)
		c := Schedule{Name: s.Name, Duration: s.Duration.Duration, MinReplicas: s.MinReplicas}
		if c.Name == "" {
			c.Name = fmt.Sprintf("schedules[%d]", i)
		}
		if s.Ramp != nil {
			c.Ramp = s.Ramp.Duration
		}
		if errs := v1alpha1.ValidateSchedule(&s, spec.MaxReplicas, path); len(errs) > 0 {
			c.Err = errs.ToAggregate()
		} else {
			loc, _ := v1alpha1.LoadTimeZone(s.TimeZone) // validated
			c.Cron, _ = v1alpha1.ParseCron(s.Cron, loc) // validated
		}
		out = append(out, c)
	}
	return out
}

// MinRequeue is the shortest wait between two evaluations of an autoscaler:
// the floor of spec.syncPeriodSeconds, and of an evaluation brought forward
// by a schedule.
const MinRequeue = time.Second

// NextEvaluation is how long after an evaluation at now (whose floor was f)
// the autoscaler is evaluated again: its own sync period (s.SyncPeriod, else
// global, the controller's --horizontal-pod-autoscaler-sync-period),
// shortened when a schedule's floor changes sooner (a ramp's start or step, a
// start, an end; never below MinRequeue), so a floor applies on time even
// under a long period. The controller requeues with it and `ebbflow simulate`
// steps with it.
func (s *Spec) NextEvaluation(f *Floor, now time.Time, global time.Duration) time.Duration {
	d := s.Period(global)
	if !f.NextChange.IsZero() {
		d = min(d, max(f.NextChange.Sub(now), MinRequeue))
	}
	return d
}

// syncPeriodOf is spec.syncPeriodSeconds as a duration (0: the controller's
// default).
func syncPeriodOf(spec *v1alpha1.AutoscalerSpec) time.Duration {
	if p := spec.SyncPeriodSeconds; p != nil && *p >= v1alpha1.MinSyncPeriodSeconds && *p <= v1alpha1.MaxSyncPeriodSeconds {
		return time.Duration(*p) * time.Second
	}
	return 0
}

// ActiveFloor is the floor the schedules hold at t, above base (the spec's
// minReplicas, where a ramp starts from). Pure: a function of the schedules
// and the clock only.
func ActiveFloor(schedules []Schedule, base int32, t time.Time) Floor {
	var f Floor
	for _, s := range schedules {
		if s.Err != nil {
			f.Problems = append(f.Problems, s.Err.Error())
			continue
		}
		o := s.at(base, t)
		if o.next.After(t) && (f.NextChange.IsZero() || o.next.Before(f.NextChange)) {
			f.NextChange = o.next
		}
		if o.floor > f.Replicas {
			f.Replicas, f.Schedule, f.Ramping, f.Start, f.Until = o.floor, s.Name, o.ramping, o.start, o.until
		}
	}
	return f
}

// occurrence is what one schedule holds at one time.
type occurrence struct {
	floor       int32
	ramping     bool
	start       time.Time
	until, next time.Time
}

// at is the schedule's floor at t: minReplicas while t is within [start,
// start+duration) of a start, rising over [start-ramp, start) before the
// next one.
func (s *Schedule) at(base int32, t time.Time) occurrence {
	var o occurrence
	upcoming := s.Cron.Next(t)
	if last, ok := s.lastStart(t); ok {
		o.floor, o.start, o.until = s.MinReplicas, last, s.until(last)
		o.next = o.until
		return o
	}
	if upcoming.IsZero() {
		return o
	}
	rampStart := upcoming.Add(-s.Ramp)
	o.next = upcoming
	if s.Ramp <= 0 || t.Before(rampStart) {
		if s.Ramp > 0 {
			o.next = rampStart
		}
		return o
	}
	o.floor, o.ramping, o.start, o.until = s.rampFloor(base, t.Sub(rampStart)), true, upcoming, s.until(upcoming)
	if rise := s.MinReplicas - base; rise > 0 {
		// The floor gains a replica about every ramp/rise.
		o.next = minTime(upcoming, t.Add(max(s.Ramp/time.Duration(rise), time.Second)))
	}
	return o
}

// rampFloor is base + ceil((minReplicas - base) × elapsed / ramp), below
// minReplicas (reached at the start).
func (s *Schedule) rampFloor(base int32, elapsed time.Duration) int32 {
	rise := s.MinReplicas - base
	if rise <= 0 {
		return s.MinReplicas
	}
	step := int32(math.Ceil(float64(rise) * float64(elapsed) / float64(s.Ramp)))
	return base + min(max(step, 0), rise)
}

// lastStart is the latest start in (t-duration, t]: the occurrence active
// at t, if any. It bisects on whole seconds (cron fires on whole minutes), so
// it costs about log2(duration in seconds) cron lookups.
func (s *Schedule) lastStart(t time.Time) (time.Time, bool) {
	if !fired(s.Cron, t, s.Duration) {
		return time.Time{}, false
	}
	lo, hi := time.Duration(0), s.Duration // fired(lo) false, fired(hi) true
	for hi-lo > time.Second {
		mid := lo + ((hi - lo) / 2).Truncate(time.Second)
		if mid <= lo {
			mid = lo + time.Second
		}
		if fired(s.Cron, t, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return s.Cron.Next(t.Add(-hi)), true
}

// fired reports whether c fires within (t-back, t].
func fired(c cron.Schedule, t time.Time, back time.Duration) bool {
	n := c.Next(t.Add(-back))
	return !n.IsZero() && !n.After(t)
}

// until is when the occurrence starting at start ends, following
// occurrences that start before it ends (at most chainLimit).
func (s *Schedule) until(start time.Time) time.Time {
	end := start.Add(s.Duration)
	for range chainLimit {
		n := s.Cron.Next(start)
		if n.IsZero() || !n.Before(end) {
			break
		}
		start, end = n, n.Add(s.Duration)
	}
	return end
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// message explains the floor.
func (f *Floor) message() string {
	if f.Ramping {
		return fmt.Sprintf("schedule %s ramps the floor to %d replicas (starts %s, active until %s)",
			f.Schedule, f.Replicas, f.Start.UTC().Format(time.RFC3339), f.Until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("schedule %s holds the floor at %d replicas until %s",
		f.Schedule, f.Replicas, f.Until.UTC().Format(time.RFC3339))
}

// schedule is the stage Schedule: the schedules' floor at Now (Floor, also
// when the count is decided already: Spec.NextEvaluation reads it) and its
// condition; it raises the proposal to the floor, so the rise goes through
// the scale-up behavior and the bounds. With failed metrics upstream keeps
// the current count; the floor still raises it (a schedule does not need
// metrics), and never lowers anything.
func (r *Result) schedule(p proposal) (proposal, []v1alpha1.DecisionStep) {
	if len(r.in.Spec.Schedules) > 0 {
		r.Floor = ActiveFloor(r.in.Spec.Schedules, r.bounds.MinReplicas, r.in.Now)
	}
	r.scheduleCondition(&r.Floor)
	if p.Decided || r.Floor.Replicas <= 0 {
		return p, nil
	}
	return withFloor(p, r.Floor, r.bounds.CurrentReplicas)
}

// withFloor raises p (the current count when p is a Hold or the metrics
// allow no decision) to the floor f; the step says so, or that the floor
// was not above p.
func withFloor(p proposal, f Floor, current int32) (proposal, []v1alpha1.DecisionStep) {
	base := p.Replicas
	if p.Hold || !p.Usable {
		base = current
	}
	if f.Replicas <= base {
		return p, []v1alpha1.DecisionStep{step(StageSchedule, p.Replicas, p.Replicas, f.message()+": not above what the metrics decide")}
	}
	// The rescale reason keeps what the floor raised (an extension's
	// reason); the step says what the floor did.
	reason := f.message()
	if p.Override != nil {
		reason = p.Override.Message + "; " + reason
	}
	next, _ := p.override(&Override{Stage: StageSchedule, Replicas: f.Replicas, Message: reason})
	return next, []v1alpha1.DecisionStep{step(StageSchedule, p.Replicas, f.Replicas, f.message())}
}

// scheduleCondition reports the schedules in the Schedule condition and
// their problems as a Warning event.
func (r *Result) scheduleCondition(f *Floor) {
	if len(r.in.Spec.Schedules) == 0 && !hasCondition(r.Status, ConditionSchedule) {
		return
	}
	c := condition(ConditionSchedule, corev1.ConditionFalse, "NoScheduleActive", "no schedule holds a floor")
	if f.Replicas > 0 {
		c = condition(ConditionSchedule, corev1.ConditionTrue, "ScheduleActive", f.message())
	} else if !f.NextChange.IsZero() {
		c.Message += "; the next change is at " + f.NextChange.UTC().Format(time.RFC3339)
	}
	if len(f.Problems) > 0 {
		problems := strings.Join(f.Problems, "; ")
		c.Reason, c.Message = "InvalidSchedule", c.Message+"; ignored: "+problems
		r.warn("InvalidSchedule", problems)
	}
	r.set(c, r.in.Now)
}
