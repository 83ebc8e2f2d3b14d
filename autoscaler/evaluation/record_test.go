package evaluation

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

var recordNow = time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func externalSpec(name, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q},
	}}
}

// scenario runs the evaluation on External Value metrics (values in
// whole units, current replicas, behavior, recommendation history, scale
// events) and builds the record, as the controller does.
type scenario struct {
	current, min, max int32
	values            []int64
	targets           []string
	behavior          *autoscalingv2.HorizontalPodAutoscalerBehavior
	history           []behavior.Recommendation
	events            behavior.ScaleEvents
	ext               Extensions
	scaledToZero      bool
}

func (s scenario) build(t *testing.T) v1alpha1.DecisionRecord {
	t.Helper()
	res := s.evaluate()
	return res.Record()
}

func (s scenario) evaluate() Result {
	in := Input{
		Spec:     Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &s.min, MaxReplicas: s.max, Behavior: s.behavior}, Extensions: s.ext},
		Settings: DefaultSettings(), Namespace: "ns", Target: "Deployment/ns/web",
		Scale:  Scale{SpecReplicas: s.current, StatusReplicas: s.current},
		Now:    recordNow,
		Memory: &Memory{Recommendations: s.history, Events: s.events},
	}
	if s.scaledToZero {
		in.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue}}
	}
	for i := range s.current {
		in.Pods = append(in.Pods, replicas.Pod{Name: string(rune('a' + i)), Phase: corev1.PodRunning, Ready: &replicas.ReadyCondition{Status: corev1.ConditionTrue}})
	}
	for i, v := range s.values {
		r := Reading{Spec: externalSpec("m"+string(rune('0'+i)), s.targets[i]), Values: []int64{v * 1000}, Timestamp: recordNow.Add(-10 * time.Second)}
		in.Spec.HPA.Metrics = append(in.Spec.HPA.Metrics, r.Spec)
		in.Readings = append(in.Readings, r)
	}
	// As the controller: every stage, the write succeeding.
	return Evaluate(in, func(int32, string) (time.Time, error) { return recordNow, nil })
}

func stagesOf(r v1alpha1.DecisionRecord) []string { return StageNames(&r) }

func TestBuildLimitingCauses(t *testing.T) {
	pods := func(v int32, period int32) *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}}}
	}
	percent := func(v int32) *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: 60}}}
	}
	tests := []struct {
		name        string
		s           scenario
		wantStages  []string
		wantDesired int32
		wantOutcome v1alpha1.Outcome
		wantWinner  string
	}{
		{"within range: no step", scenario{current: 2, min: 1, max: 10, values: []int64{20}, targets: []string{"10"}},
			nil, 4, v1alpha1.OutcomeScaledUp, "m0"},
		{"tolerance keeps current", scenario{current: 4, min: 1, max: 10, values: []int64{21}, targets: []string{"20"}},
			[]string{StageTolerance}, 4, v1alpha1.OutcomeUnchanged, "m0"},
		{"max replicas", scenario{current: 4, min: 1, max: 5, values: []int64{80}, targets: []string{"10"}},
			[]string{StageMaxReplicas}, 5, v1alpha1.OutcomeScaledUp, ""},
		{"fixed scale-up limit max(2x,4)", scenario{current: 2, min: 1, max: 100, values: []int64{200}, targets: []string{"10"}},
			[]string{StageScaleUpLimit}, 4, v1alpha1.OutcomeScaledUp, ""},
		{"min replicas", scenario{current: 4, min: 3, max: 10, values: []int64{1}, targets: []string{"10"},
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: percent(100)}},
			[]string{StageMinReplicas}, 3, v1alpha1.OutcomeScaledDown, ""},
		{"scale-down stabilization keeps the highest recommendation", scenario{current: 6, min: 1, max: 10, values: []int64{5}, targets: []string{"10"},
			history: []behavior.Recommendation{{Replicas: 6, Timestamp: recordNow.Add(-time.Minute)}}},
			[]string{StageScaleDownStabilization}, 6, v1alpha1.OutcomeUnchanged, ""},
		{"scale-up stabilization keeps the lowest recommendation", scenario{current: 2, min: 1, max: 10, values: []int64{60}, targets: []string{"10"},
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](120)}},
			history:  []behavior.Recommendation{{Replicas: 2, Timestamp: recordNow.Add(-time.Minute)}}},
			[]string{StageScaleUpStabilization}, 2, v1alpha1.OutcomeUnchanged, ""},
		{"scale-up Pods policy", scenario{current: 2, min: 1, max: 20, values: []int64{100}, targets: []string{"10"},
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: pods(1, 60)}},
			[]string{StageScaleUpPolicy}, 3, v1alpha1.OutcomeScaledUp, ""},
		{"scale-down Percent policy", scenario{current: 8, min: 1, max: 20, values: []int64{2}, targets: []string{"10"},
			behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: percent(50)}},
			[]string{StageScaleDownPolicy}, 4, v1alpha1.OutcomeScaledDown, ""},
		{"dry run: would scale", scenario{current: 2, min: 1, max: 10, values: []int64{20}, targets: []string{"10"}, ext: Extensions{DryRun: true}},
			[]string{StageDryRun}, 4, v1alpha1.OutcomeWouldScale, ""},
		{"paused: would scale", scenario{current: 2, min: 1, max: 10, values: []int64{20}, targets: []string{"10"}, ext: Extensions{Paused: true}},
			[]string{StagePaused}, 4, v1alpha1.OutcomeWouldScale, ""},
		{"above max: bounds before metrics", scenario{current: 12, min: 1, max: 10, values: []int64{40}, targets: []string{"10"}},
			[]string{StageMaxReplicas}, 10, v1alpha1.OutcomeScaledDown, ""},
		{"zero replicas, not scaled to zero by us: disabled", scenario{current: 0, min: 1, max: 10, values: []int64{40}, targets: []string{"10"}},
			[]string{StageScalingDisabled}, 0, v1alpha1.OutcomeUnchanged, ""},
		{"the larger proposal wins", scenario{current: 4, min: 1, max: 10, values: []int64{15, 20}, targets: []string{"10", "10"}},
			nil, 8, v1alpha1.OutcomeScaledUp, "m1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.s.build(t)
			if got := stagesOf(rec); !reflect.DeepEqual(got, tc.wantStages) && !(len(got) == 0 && len(tc.wantStages) == 0) {
				t.Errorf("stages = %v, want %v (record %+v)", got, tc.wantStages, rec.Steps)
			}
			if rec.DesiredReplicas != tc.wantDesired || rec.Outcome != tc.wantOutcome {
				t.Errorf("desired %d outcome %s, want %d %s", rec.DesiredReplicas, rec.Outcome, tc.wantDesired, tc.wantOutcome)
			}
			if tc.wantWinner != "" && rec.WinningMetric != tc.wantWinner {
				t.Errorf("winner %q, want %q", rec.WinningMetric, tc.wantWinner)
			}
			for _, s := range rec.Steps {
				if s.Message == "" {
					t.Errorf("step %s has no message", s.Stage)
				}
			}
			if len(tc.wantStages) > 0 {
				last := rec.Steps[len(rec.Steps)-1]
				if tc.s.ext == (Extensions{}) && last.To != rec.DesiredReplicas {
					t.Errorf("last step ends at %d, record desired %d", last.To, rec.DesiredReplicas)
				}
			}
		})
	}
}

func TestBuildMetrics(t *testing.T) {
	rec := scenario{current: 2, min: 1, max: 10, values: []int64{40}, targets: []string{"10"}}.build(t)
	if len(rec.Metrics) != 1 {
		t.Fatalf("metrics = %+v", rec.Metrics)
	}
	m := rec.Metrics[0]
	if m.Type != "External" || m.Name != "m0" || m.Value.String() != "40" || m.Target.String() != "10" || m.TargetType != "Value" ||
		*m.Replicas != 8 || m.Reason != string(replicas.ReasonProportional) || !m.Timestamp.Time.Equal(recordNow.Add(-10*time.Second)) {
		t.Errorf("metric record = %+v (value %v target %v)", m, m.Value, m.Target)
	}
	if rec.Proposal == nil || *rec.Proposal != 8 {
		t.Errorf("proposal = %v", rec.Proposal)
	}
}

// Winner is the record of the metric whose proposal won: the second of two
// here (at 2 replicas, 40 against a target of 20 proposes 2 × 2 = 4; 90
// against 10 proposes 2 × 9 = 18), none when every metric failed.
func TestWinner(t *testing.T) {
	res := scenario{current: 2, min: 1, max: 30, values: []int64{40, 90}, targets: []string{"20", "10"}}.evaluate()
	w := res.Winner()
	if w == nil {
		t.Fatal("no winner")
	}
	if w.Name != "m1" || w.Value.String() != "90" || w.Target.String() != "10" || w.Replicas == nil || *w.Replicas != 18 {
		t.Errorf("winner = %+v (value %v, target %v, replicas %v), want m1 at 90 against 10 proposing 18", w, w.Value, w.Target, w.Replicas)
	}
	if got := res.Outline.WinningMetric; got != w.Name {
		t.Errorf("outline's winning metric %q, Winner's %q", got, w.Name)
	}

	spec := externalSpec("queue", "10")
	minR := int32(1)
	failed := Evaluate(Input{Spec: Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{spec}}},
		Settings: DefaultSettings(), Scale: Scale{SpecReplicas: 3, StatusReplicas: 3},
		Readings: []Reading{{Spec: spec, Err: errors.New("unable to fetch metrics")}}, Now: recordNow, Memory: &Memory{}}, nil)
	if w := failed.Winner(); w != nil {
		t.Errorf("winner of a failed evaluation = %+v, want none", w)
	}
}

func TestBuildFailedMetric(t *testing.T) {
	spec := externalSpec("queue", "10")
	r := Reading{Spec: spec, Err: fetchError(spec, "ns", errors.New("unable to fetch metrics"))}
	minR := int32(1)
	res := Evaluate(Input{Spec: Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{spec}}},
		Settings: DefaultSettings(), Scale: Scale{SpecReplicas: 3, StatusReplicas: 3}, Readings: []Reading{r}, Now: recordNow, Memory: &Memory{}}, nil)
	rec := res.Record()
	if rec.Outcome != v1alpha1.OutcomeFailed || rec.DesiredReplicas != 3 || rec.Scaled || rec.Error == "" {
		t.Errorf("record = %+v", rec)
	}
	if rec.Metrics[0].Error == "" || rec.Metrics[0].Replicas != nil {
		t.Errorf("metric = %+v", rec.Metrics[0])
	}
}

func TestBuildBounds(t *testing.T) {
	var values []int64
	var targets []string
	for range 40 {
		values, targets = append(values, 10), append(targets, "10")
	}
	rec := scenario{current: 3, min: 1, max: 10, values: values, targets: targets}.build(t)
	if len(rec.Metrics) != v1alpha1.MaxRecordedMetrics {
		t.Errorf("metrics = %d, want %d", len(rec.Metrics), v1alpha1.MaxRecordedMetrics)
	}
	long := strings.Repeat("é", 400)
	if got := cut(long); len(got) > v1alpha1.MaxRecordedMessage || !strings.HasSuffix(got, "...") || !strings.HasPrefix(got, "éé") {
		t.Errorf("cut: %d bytes, %q...", len(got), got[:8])
	}
	if got := cut("short"); got != "short" {
		t.Errorf("cut(short) = %q", got)
	}
	enc, err := EncodeRecord(&rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > 16<<10 {
		t.Errorf("encoded record of 40 metrics is %d bytes", len(enc))
	}
}

func TestEncodeRoundTripAndsameOutcome(t *testing.T) {
	rec := scenario{current: 8, min: 1, max: 20, values: []int64{2}, targets: []string{"10"},
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}}}.build(t)
	s, err := EncodeRecord(&rec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s, "\n") || strings.Contains(s, "  ") {
		t.Errorf("not compact: %s", s)
	}
	back, err := DecodeRecord(s)
	if err != nil {
		t.Fatal(err)
	}
	if !sameOutcome(&rec, back) || !back.Time.Equal(&rec.Time) || len(back.Steps) != len(rec.Steps) || back.Metrics[0].Value.Cmp(*rec.Metrics[0].Value) != 0 {
		t.Errorf("round trip: %+v != %+v", back, rec)
	}
	if _, err := DecodeRecord("{not json"); err == nil {
		t.Error("Decode accepted invalid JSON")
	}
	later := rec.DeepCopy()
	later.Time.Time = later.Time.Add(time.Minute)
	later.Metrics[0].Value = resource.NewQuantity(11, resource.DecimalSI)
	if !sameOutcome(&rec, later) {
		t.Error("time and values changed the outcome")
	}
	for name, mutate := range map[string]func(r *v1alpha1.DecisionRecord){
		"desired": func(r *v1alpha1.DecisionRecord) { r.DesiredReplicas++ },
		"current": func(r *v1alpha1.DecisionRecord) { r.CurrentReplicas++ },
		"winner":  func(r *v1alpha1.DecisionRecord) { r.WinningMetric = "other" },
		"step":    func(r *v1alpha1.DecisionRecord) { r.Steps = nil },
		"error":   func(r *v1alpha1.DecisionRecord) { r.Error = "boom" },
		"scaled":  func(r *v1alpha1.DecisionRecord) { r.Scaled = !r.Scaled },
		"held":    func(r *v1alpha1.DecisionRecord) { r.NotScaledReason = "paused" },
		"outcome": func(r *v1alpha1.DecisionRecord) { r.Outcome = v1alpha1.OutcomeFailed },
	} {
		c := rec.DeepCopy()
		mutate(c)
		if sameOutcome(&rec, c) {
			t.Errorf("%s change not seen", name)
		}
	}
	if sameOutcome(nil, &rec) || sameOutcome(&rec, nil) {
		t.Error("nil record equal to a record")
	}
}

// sameOutcome compares records as the controller does: by signature.
func sameOutcome(a, b *v1alpha1.DecisionRecord) bool {
	return a != nil && b != nil && Signature(a) == Signature(b)
}
