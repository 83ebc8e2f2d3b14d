package evaluation

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

var t0 = time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)

func ptr64(v int64) *int64 { return &v }

// overrideOf runs fallback and activation, in the stages' order, on a
// usable proposal of replicas, and returns what replaced it (nil: nothing).
func overrideOf(t *testing.T, in proposalInput, replicas int32) (*Override, proposalResult) {
	t.Helper()
	var res proposalResult
	p := proposal{Replicas: replicas, Usable: true}
	p = in.fallback(p, &res)
	p = in.activation(p, &res)
	return p.Override, res
}

func TestProposalNoExtensionIsIdentity(t *testing.T) {
	got, res := overrideOf(t, proposalInput{Now: t0, CurrentReplicas: 3, MinReplicas: 0,
		Metrics: []metricState{{Name: "q", Value: 0, HasValue: true}, {Name: "x", Failed: true}}}, 3)
	if got != nil || len(res.Conditions) != 0 || len(res.Events) != 0 || res.FallbackActive {
		t.Errorf("no extension set, got %+v", res)
	}
}

func TestActivation(t *testing.T) {
	q := func(v int64) metricState {
		return metricState{Name: "queue", Value: v * 1000, HasValue: true, Activation: ptr64(5000)}
	}
	tests := []struct {
		name      string
		current   int32
		min       int32
		metric    metricState
		idleSince time.Time
		proposal  int32
		want      *Override // nil: upstream decides
		wantIdle  bool
	}{
		{"at zero, above activation: wake to at least 1", 0, 0, q(6), time.Time{}, 0,
			&Override{Stage: StageActivation, Replicas: 1}, false},
		{"at zero, above activation with a larger proposal: keep it", 0, 0, q(60), time.Time{}, 4,
			&Override{Stage: StageActivation, Replicas: 4}, false},
		{"at zero, value between 0 and activation: stay at zero", 0, 0, q(3), time.Time{}, 1,
			&Override{Stage: StageActivation, Replicas: 0}, true},
		{"at zero, exactly at activation: stay at zero", 0, 0, q(5), time.Time{}, 1,
			&Override{Stage: StageActivation, Replicas: 0}, true},
		{"running, idle for less than after: at least 1", 3, 0, q(0), t0.Add(-4 * time.Minute), 0,
			&Override{Stage: StageActivation, Replicas: 1}, true},
		{"running, idle for exactly after: propose zero", 3, 0, q(0), t0.Add(-5 * time.Minute), 2,
			&Override{Stage: StageActivation, Replicas: 0}, true},
		{"running, idle just under after", 3, 0, q(0), t0.Add(-5*time.Minute + time.Second), 0,
			&Override{Stage: StageActivation, Replicas: 1}, true},
		{"running, active, upstream proposes 0: floor at 1", 3, 0, q(6), time.Time{}, 0,
			&Override{Stage: StageActivation, Replicas: 1}, false},
		{"running, active, upstream proposes more: upstream decides", 3, 0, q(60), time.Time{}, 7, nil, false},
		{"failed metric is neither idle nor active", 3, 0, metricState{Name: "queue", Failed: true, Activation: ptr64(5000)}, time.Time{}, 0,
			&Override{Stage: StageActivation, Replicas: 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := proposalInput{Spec: Extensions{ScaleToZero: &ScaleToZero{After: 5 * time.Minute}}, Now: t0,
				CurrentReplicas: tc.current, MinReplicas: tc.min, Metrics: []metricState{tc.metric}, State: ExtensionState{IdleSince: tc.idleSince}}
			got, res := overrideOf(t, in, tc.proposal)
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("override %+v, want none", got)
			case tc.want != nil && (got == nil || got.Replicas != tc.want.Replicas || got.Stage != tc.want.Stage || got.Hold):
				t.Errorf("override %+v, want %+v", got, tc.want)
			}
			if idle := !res.State.IdleSince.IsZero(); idle != tc.wantIdle {
				t.Errorf("idle since %v, want idle %v", res.State.IdleSince, tc.wantIdle)
			}
			if tc.wantIdle && !tc.idleSince.IsZero() && !res.State.IdleSince.Equal(tc.idleSince) {
				t.Errorf("idle since moved from %v to %v", tc.idleSince, res.State.IdleSince)
			}
			if got != nil && got.Message == "" {
				t.Error("override without a message")
			}
		})
	}
	t.Run("activated message names the metric", func(t *testing.T) {
		in := proposalInput{Now: t0, Metrics: []metricState{q(6)}}
		got, _ := overrideOf(t, in, 0)
		if got == nil || !strings.Contains(got.Message, "queue 6 > activation 5") {
			t.Errorf("override %+v", got)
		}
	})
	t.Run("minReplicas above zero: no activation", func(t *testing.T) {
		if got, _ := overrideOf(t, proposalInput{Now: t0, CurrentReplicas: 2, MinReplicas: 1, Metrics: []metricState{q(0)}}, 0); got != nil {
			t.Errorf("override %+v", got)
		}
	})
}

func TestFallback(t *testing.T) {
	ok := metricState{Name: "rps", Value: 10, HasValue: true, Timestamp: t0.Add(-10 * time.Second)}
	failed := metricState{Name: "queue", Failed: true}
	stale := func(age time.Duration) metricState {
		return metricState{Name: "queue", Value: 3000, HasValue: true, Timestamp: t0.Add(-age)}
	}
	replicas := &Fallback{Policy: FallbackReplicas, Replicas: 5, After: time.Minute, MaxAge: 2 * time.Minute}
	tests := []struct {
		name       string
		f          *Fallback
		current    int32
		metrics    []metricState
		badSince   time.Time
		wasActive  bool
		proposal   int32
		wantActive bool
		want       *Override
		wantEvent  string
	}{
		{"healthy: upstream decides", replicas, 3, []metricState{ok}, time.Time{}, false, 3, false, nil, ""},
		{"failed for less than after: upstream rules", replicas, 3, []metricState{ok, failed}, t0.Add(-59 * time.Second), false, 1, false, nil, ""},
		{"failed for exactly after: Replicas", replicas, 3, []metricState{ok, failed}, t0.Add(-time.Minute), false, 1, true,
			&Override{Stage: StageFallback, Replicas: 5}, "FallbackActivated"},
		{"first failure starts the clock", replicas, 3, []metricState{failed}, time.Time{}, false, 1, false, nil, ""},
		{"stale exactly maxAge is fresh", replicas, 3, []metricState{stale(2 * time.Minute)}, t0.Add(-time.Hour), false, 3, false, nil, ""},
		{"stale past maxAge for after", replicas, 3, []metricState{stale(2*time.Minute + time.Second)}, t0.Add(-time.Minute), false, 3, true,
			&Override{Stage: StageFallback, Replicas: 5}, "FallbackActivated"},
		{"Hold keeps the current replicas", &Fallback{Policy: FallbackHold}, 4, []metricState{failed}, t0.Add(-time.Hour), true, 1, true,
			&Override{Stage: StageFallback, Hold: true, Replicas: 4}, ""},
		{"AtLeast below current keeps current", &Fallback{Policy: FallbackAtLeast, Replicas: 2}, 4, []metricState{failed}, t0.Add(-time.Hour), true, 1, true,
			&Override{Stage: StageFallback, Replicas: 4}, ""},
		{"AtLeast above current", &Fallback{Policy: FallbackAtLeast, Replicas: 6}, 4, []metricState{failed}, t0.Add(-time.Hour), true, 1, true,
			&Override{Stage: StageFallback, Replicas: 6}, ""},
		{"recovered: cleared event, upstream decides", replicas, 5, []metricState{ok}, time.Time{}, true, 3, false, nil, "FallbackCleared"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := ExtensionState{BadSince: map[string]time.Time{}, FallbackActive: tc.wasActive}
			if !tc.badSince.IsZero() {
				st.BadSince["queue"] = tc.badSince
			}
			in := proposalInput{Spec: Extensions{Fallback: tc.f}, Now: t0, CurrentReplicas: tc.current, MinReplicas: 1, Metrics: tc.metrics, State: st}
			got, res := overrideOf(t, in, tc.proposal)
			if tc.want == nil && got != nil || tc.want != nil && (got == nil || got.Replicas != tc.want.Replicas || got.Hold != tc.want.Hold || got.Stage != tc.want.Stage) {
				t.Errorf("override %+v, want %+v", got, tc.want)
			}
			if res.FallbackActive != tc.wantActive {
				t.Errorf("active %v, want %v", res.FallbackActive, tc.wantActive)
			}
			var cond string
			for _, c := range res.Conditions {
				if c.Type == ConditionFallback {
					cond = string(c.Status)
					if tc.wantActive && !strings.Contains(c.Message, "queue") {
						t.Errorf("condition does not name the metric: %q", c.Message)
					}
				}
			}
			if want := map[bool]string{true: string(corev1.ConditionTrue), false: string(corev1.ConditionFalse)}[tc.wantActive]; cond != want {
				t.Errorf("Fallback condition %q, want %q", cond, want)
			}
			var events []string
			for _, e := range res.Events {
				events = append(events, e.Reason)
			}
			if strings.Join(events, ",") != tc.wantEvent {
				t.Errorf("events %v, want %q", events, tc.wantEvent)
			}
			for _, m := range tc.metrics {
				_, tracked := res.State.BadSince[m.Name]
				bad, _ := badness(m, tc.f.MaxAge, t0)
				if tracked != bad {
					t.Errorf("metric %s tracked %v, bad %v", m.Name, tracked, bad)
				}
			}
		})
	}
}

// Fallback wins over activation while it applies.
func TestFallbackBeforeActivation(t *testing.T) {
	in := proposalInput{Spec: Extensions{Fallback: &Fallback{Policy: FallbackReplicas, Replicas: 3}}, Now: t0, CurrentReplicas: 0, MinReplicas: 0,
		Metrics: []metricState{{Name: "queue", Failed: true, Activation: ptr64(1000)}},
		State:   ExtensionState{BadSince: map[string]time.Time{"queue": t0.Add(-time.Hour)}}}
	got, _ := overrideOf(t, in, 0)
	if got == nil || got.Stage != StageFallback || got.Replicas != 3 {
		t.Errorf("override %+v", got)
	}
}

// A failed metric makes the combined proposal unusable; with activation set
// and replicas above zero, the activation stage must not turn that into a
// proposal of 1 (a scale-down from N) before the fallback applies: upstream's
// rule, a failed metric blocks a scale-down, stands.
func TestActivationFailedMetricBlocksScaleDown(t *testing.T) {
	in := proposalInput{Spec: Extensions{ScaleToZero: &ScaleToZero{After: time.Minute}}, Now: t0, CurrentReplicas: 6, MinReplicas: 0,
		Metrics: []metricState{{Name: "queue", Failed: true, Activation: ptr64(5000)}}}
	var res proposalResult
	if got := in.activation(proposal{Replicas: 0, Usable: false}, &res).Override; got != nil {
		t.Errorf("unusable proposal at 6 replicas: override %+v, want none (upstream holds)", got)
	}
	// Through the stages: the failed metric fails the decision.
	var h Memory
	rd := external(0)
	rd.Values, rd.FetchErr = nil, errors.New("unable to fetch metrics")
	ev := input(&h, 6, rd)
	zero := int32(0)
	ev.Spec.HPA.MinReplicas, ev.Spec.HPA.MaxReplicas = &zero, 10
	ev.Spec.Extensions, ev.Spec.MetricOptions = in.Spec, []MetricOptions{{Activation: qty("5")}}
	d := Evaluate(ev, nil).Decision
	if !d.Failed || d.Rescale {
		t.Errorf("decision with a failed metric: failed %v rescale %v desired %d, want failed and no rescale", d.Failed, d.Rescale, d.Desired)
	}
}

// holdInput is a decision the stages Paused and DryRun act on; held what
// they leave of it.
type holdInput struct {
	Spec                     Extensions
	CurrentReplicas, Desired int32
	Rescale, Failed          bool
}

type held struct {
	Desired        int32
	Rescale, Write bool
	Hold           string
	Steps          []v1alpha1.DecisionStep
}

// applyHolds runs the declared stages Paused and DryRun on in's decision,
// with both conditions in the status (so that a False one is reported
// too), and returns what they leave, their conditions and their events.
func applyHolds(in holdInput) (held, []autoscalingv2.HorizontalPodAutoscalerCondition, []Event) {
	r := &Result{bounds: Bounds{CurrentReplicas: in.CurrentReplicas}}
	r.in.Spec.Extensions = in.Spec
	r.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: ConditionPaused}, {Type: ConditionDryRun}}
	rescale := in.Rescale && !in.Failed
	p := decided(in.Desired, rescale)
	var steps []v1alpha1.DecisionStep
	for _, s := range stages {
		if s.name == StagePaused || s.name == StageDryRun {
			var st []v1alpha1.DecisionStep
			p, st = s.run(r, p)
			steps = append(steps, st...)
		}
	}
	return held{Desired: p.Replicas, Rescale: rescale, Write: p.Write, Hold: p.Held, Steps: steps}, r.Status.Conditions, r.Events
}

func TestApply(t *testing.T) {
	tests := []struct {
		name       string
		in         holdInput
		want       held
		conditions map[string]corev1.ConditionStatus
		events     []string
	}{
		{
			name: "no extension is the identity: a rescale is written",
			in:   holdInput{CurrentReplicas: 3, Desired: 7, Rescale: true},
			want: held{Desired: 7, Rescale: true, Write: true},
		},
		{
			name: "no extension, no change",
			in:   holdInput{CurrentReplicas: 3, Desired: 3},
			want: held{Desired: 3},
		},
		{
			name: "failed decision writes nothing",
			in:   holdInput{CurrentReplicas: 3, Desired: 3, Rescale: true, Failed: true},
			want: held{Desired: 3},
		},
		{
			name:       "paused holds a rescale",
			in:         holdInput{Spec: Extensions{Paused: true}, CurrentReplicas: 3, Desired: 7, Rescale: true},
			want:       held{Desired: 7, Rescale: true, Hold: HoldPaused, Steps: []v1alpha1.DecisionStep{{Stage: StagePaused, From: 7, To: 3, Message: "paused: the scale is not written"}}},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionTrue, "DryRun": corev1.ConditionFalse},
		},
		{
			name:       "paused without a change adds no step",
			in:         holdInput{Spec: Extensions{Paused: true}, CurrentReplicas: 3, Desired: 3},
			want:       held{Desired: 3},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionTrue},
		},
		{
			name:       "dry run holds a rescale and announces it",
			in:         holdInput{Spec: Extensions{DryRun: true}, CurrentReplicas: 3, Desired: 7, Rescale: true},
			want:       held{Desired: 7, Rescale: true, Hold: HoldDryRun, Steps: []v1alpha1.DecisionStep{{Stage: StageDryRun, From: 7, To: 3, Message: "dry run: the scale is not written"}}},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionFalse, "DryRun": corev1.ConditionTrue},
			events:     []string{"Normal DryRunRescale would scale from 3 to 7"},
		},
		{
			name:       "paused wins over dry run: no DryRunRescale event",
			in:         holdInput{Spec: Extensions{Paused: true, DryRun: true}, CurrentReplicas: 4, Desired: 2, Rescale: true},
			want:       held{Desired: 2, Rescale: true, Hold: HoldPaused, Steps: []v1alpha1.DecisionStep{{Stage: StagePaused, From: 2, To: 4, Message: "paused: the scale is not written"}}},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionTrue, "DryRun": corev1.ConditionTrue},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, conds, events := applyHolds(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Apply = %+v, want %+v", got, tc.want)
			}
			for typ, status := range tc.conditions {
				found := false
				for _, c := range conds {
					if string(c.Type) == typ {
						found = true
						if c.Status != status {
							t.Errorf("condition %s = %s, want %s", typ, c.Status, status)
						}
					}
				}
				if !found {
					t.Errorf("condition %s missing", typ)
				}
			}
			var gotEvents []string
			for _, e := range events {
				gotEvents = append(gotEvents, e.Type+" "+e.Reason+" "+e.Message)
			}
			if !reflect.DeepEqual(gotEvents, tc.events) {
				t.Errorf("events = %q, want %q", gotEvents, tc.events)
			}
		})
	}
}
