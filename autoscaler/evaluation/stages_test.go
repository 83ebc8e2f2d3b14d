package evaluation

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// The record's steps come in the declared order of the stages: each step
// is one a stage declares (stage.records), and the stages that added them
// are in the order of the list. The scenarios run many stages at once.
func TestStagesOrderIsTheRecordsOrder(t *testing.T) {
	noon := time.Date(start.Year(), start.Month(), start.Day(), 12, 0, 0, 0, time.UTC)
	floor := func(t *testing.T, minReplicas int32) []Schedule {
		return []Schedule{sched(t, "sale", "0 12 * * *", "", time.Hour, 0, minReplicas)}
	}
	for _, tc := range []struct {
		name string
		in   func(t *testing.T, h *Memory) Input
		want []string
	}{
		{"forecast, schedule, behavior, dry run", func(t *testing.T, h *Memory) Input {
			in := forecastInput(h, 2, 20_000, &v1alpha1.MetricForecast{Lead: &metav1.Duration{Duration: 5 * time.Minute}, Method: "SeasonalMax"}, dailyPeak(3, 20, 90))
			in.Spec.Schedules, in.Spec.Extensions.DryRun = floor(t, 12), true
			in.Now = noon
			return in
		}, []string{StageTolerance, StageForecast, StageSchedule, StageScaleUpLimit, StageDryRun}},
		{"fallback (activation passes), schedule, behavior, paused", func(t *testing.T, h *Memory) Input {
			h.Extensions.BadSince = map[string]time.Time{"queue": noon.Add(-time.Hour)}
			rd := external(0)
			rd.Values, rd.FetchErr = nil, errors.New("prometheus is down")
			in := input(h, 2, rd)
			zero := int32(0)
			in.Spec.HPA.MinReplicas, in.Spec.MetricOptions = &zero, []MetricOptions{{Activation: qty("1")}}
			in.Spec.Extensions = Extensions{Paused: true, Fallback: &Fallback{Policy: FallbackReplicas, Replicas: 3}}
			in.Spec.Schedules, in.Now = floor(t, 6), noon
			return in
		}, []string{StageFallback, StageSchedule, StageScaleUpLimit, StagePaused}},
		{"bounds before everything, the holds after", func(t *testing.T, h *Memory) Input {
			in := input(h, 30, external(60_000))
			in.Spec.Schedules, in.Now, in.Spec.Extensions.DryRun = floor(t, 6), noon, true
			return in
		}, []string{StageMaxReplicas, StageDryRun}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Memory
			res := Evaluate(tc.in(t, &h), nil)
			rec := res.Record()
			got := StageNames(&rec)
			if !slices.Equal(got, tc.want) {
				t.Errorf("steps %v, want %v (%+v)", got, tc.want, rec.Steps)
			}
			at := 0 // the stage that added the last step
			for _, s := range rec.Steps {
				i := slices.IndexFunc(stages[at:], func(st stage) bool { return slices.Contains(st.records, s.Stage) })
				if i < 0 {
					t.Fatalf("step %s (of %v) is no stage's at or after %s in the declared list", s.Stage, got, stages[at].name)
				}
				at += i
			}
		})
	}
}

// The list itself: upstream's stages in upstream's order, the extensions
// that change the proposal before the behavior, the holds after it, the
// write last; every step stage declared once, except the bounds' (the gate
// and the behavior both clamp to them).
func TestStagesDeclared(t *testing.T) {
	var names []string
	seen := map[string]string{}
	for _, s := range stages {
		names = append(names, s.name)
		for _, r := range s.records {
			if by, ok := seen[r]; ok && r != StageMinReplicas && r != StageMaxReplicas {
				t.Errorf("step stage %s declared by %s and %s", r, by, s.name)
			}
			seen[r] = s.name
		}
	}
	want := "Bounds,Metrics,Fallback,Activation,Forecast,Schedule,Behavior,ScaleFromZero,Paused,DryRun,Write"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("stages %s, want %s", got, want)
	}
	if stages[0].wanted != nil || stages[1].wanted != nil || stages[6].wanted != nil || stages[7].wanted != nil || stages[10].wanted != nil {
		t.Error("an upstream stage or the write is not run every evaluation")
	}
}

// An evaluation with no extension set enters no extension's stage.
func TestNoExtensionNoExtensionStage(t *testing.T) {
	var h Memory
	in := input(&h, 2, external(60_000))
	r := Result{in: in, bounds: boundsOf(&in)}
	for _, s := range stages {
		if s.wanted != nil && s.wanted(&r) {
			t.Errorf("stage %s wanted without its extension", s.name)
		}
	}
	in.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: ConditionPaused}}
	r = Result{in: in, bounds: boundsOf(&in), Status: in.Status}
	if !r.wantsPaused() {
		t.Error("a Paused condition left in the status: the stage Paused must turn it False")
	}
}
