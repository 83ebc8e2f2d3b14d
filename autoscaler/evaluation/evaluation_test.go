package evaluation

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

var start = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func external(value int64) Reading {
	q := resource.MustParse("10")
	return Reading{
		Spec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
		}},
		Values: []int64{value}, Timestamp: start,
	}
}

func input(h *Memory, current int32, readings ...Reading) Input {
	minR := int32(1)
	in := Input{
		Spec:     Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 20}},
		Settings: DefaultSettings(), Namespace: "ns", Target: "Deployment/ns/web",
		Scale:    Scale{SpecReplicas: current, StatusReplicas: current},
		Readings: readings, Now: start, Memory: h,
	}
	for _, rd := range readings {
		in.Spec.HPA.Metrics = append(in.Spec.HPA.Metrics, rd.Spec)
	}
	return in
}

func conditionOf(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// written is a WriteScale that returns at and err.
func written(at time.Time, err error) WriteScale {
	return func(int32, string) (time.Time, error) { return at, err }
}

// Evaluate seeds and keeps the history; its stage Write writes through its
// WriteScale and completes the result: the scale event, the conditions, the
// event and the status of a rescale. A Scratch changes nothing but where
// the buffers come from.
func TestEvaluateAndWritten(t *testing.T) {
	var h Memory
	in := input(&h, 2, external(60_000))
	in.Spec.HPA.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	var wrote []int32
	var reason string
	res := Evaluate(in, func(desired int32, why string) (time.Time, error) {
		wrote, reason = append(wrote, desired), why
		return start, nil
	})
	if !res.Write || res.Desired != 6 || res.Decision.Desired != 6 || !slices.Equal(wrote, []int32{6}) {
		t.Fatalf("60 messages at 10 per replica from 2: desired %d write %v (wrote %v), want the default policies' limit 6 written once", res.Desired, res.Write, wrote)
	}
	if reason != res.Decision.RescaleReason || reason == "" {
		t.Errorf("written with the reason %q, want the decision's %q", reason, res.Decision.RescaleReason)
	}
	if len(h.Recommendations) == 0 {
		t.Error("no recommendation kept")
	}
	if len(h.Events.Up) != 1 || h.Events.Up[0].Change != 4 {
		t.Errorf("scale events %+v", h.Events)
	}
	if !res.Scaled || res.Status.DesiredReplicas != 6 || res.Status.LastScaleTime == nil || !res.ScaleEventsChanged {
		t.Errorf("status %+v, scale events changed %v", res.Status, res.ScaleEventsChanged)
	}
	if c := conditionOf(res.Status, autoscalingv2.AbleToScale); c == nil || c.Reason != "SucceededRescale" {
		t.Errorf("AbleToScale %+v", c)
	}
	if last := res.Events[len(res.Events)-1]; last.Reason != "SuccessfulRescale" {
		t.Errorf("events %+v", res.Events)
	}
	if res.Outline.Outcome != v1alpha1.OutcomeScaledUp || res.Direction() != "up" {
		t.Errorf("outcome %s, direction %s", res.Outline.Outcome, res.Direction())
	}
	if len(in.Status.Conditions) != 0 {
		t.Errorf("the input's status changed: %+v", in.Status)
	}
	var scratch Scratch
	for _, v := range []int64{60_000, 5_000, 200_000} {
		h2 := h
		plain := Evaluate(input(&h2, 4, external(v)), nil)
		h3 := h
		in := input(&h3, 4, external(v))
		in.Scratch = &scratch
		reused := Evaluate(in, nil)
		if plain.Desired != reused.Desired || !reflect.DeepEqual(plain.Status.CurrentMetrics, reused.Status.CurrentMetrics) {
			t.Errorf("value %d: %d without scratch, %d with", v, plain.Desired, reused.Desired)
		}
	}
}

// A failed write keeps the desired replicas and reports upstream's event and
// condition.
func TestWrittenFailed(t *testing.T) {
	var h Memory
	res := Evaluate(input(&h, 2, external(60_000)), written(start, errors.New("conflict")))
	if res.Scaled || res.Err == nil || res.Status.DesiredReplicas != 0 || len(h.Events.Up) != 0 {
		t.Errorf("scaled %v err %v status %+v", res.Scaled, res.Err, res.Status)
	}
	if c := conditionOf(res.Status, autoscalingv2.AbleToScale); c == nil || c.Reason != "FailedUpdateScale" {
		t.Errorf("AbleToScale %+v", c)
	}
	if res.Direction() != "failed" || res.Outline.Outcome != v1alpha1.OutcomeFailed {
		t.Errorf("direction %s outcome %s", res.Direction(), res.Outline.Outcome)
	}
}

// A failed observation decides nothing and keeps the extensions' state.
func TestInputsError(t *testing.T) {
	h := Memory{Extensions: ExtensionState{IdleSince: start}}
	in := input(&h, 3, external(1))
	in.InputsErr = &SelectorError{EventReason: "SelectorRequired", Message: "selector is required",
		ConditionReason: "InvalidSelector", ConditionMessage: "the HPA target's scale is missing a selector"}
	res := Evaluate(in, nil)
	if !res.Decision.Failed || res.Decision.Desired != 3 || !h.Extensions.IdleSince.Equal(start) || res.Write {
		t.Errorf("decision %+v", res.Decision)
	}
	if c := conditionOf(res.Status, autoscalingv2.ScalingActive); c == nil || c.Reason != "InvalidSelector" {
		t.Errorf("ScalingActive %+v", c)
	}
	if len(res.Events) != 2 || res.Events[0].Reason != "SelectorRequired" || res.Events[1].Reason != "FailedComputeMetricsReplicas" {
		t.Errorf("events %+v", res.Events)
	}
}

// A scale that could not be read is reported and nothing else is decided.
func TestScaleError(t *testing.T) {
	var h Memory
	in := input(&h, 0)
	in.ScaleErr, in.ScaleCause = errors.New("failed to query scale subresource: gone"), errors.New("gone")
	if ReadsMetrics(&in) {
		t.Error("reads metrics without a scale")
	}
	res := Evaluate(in, nil)
	if res.Err != in.ScaleErr || res.Write || res.Direction() != "" || res.Outline.Outcome != v1alpha1.OutcomeFailed {
		t.Errorf("err %v write %v outcome %s", res.Err, res.Write, res.Outline.Outcome)
	}
	if c := conditionOf(res.Status, autoscalingv2.AbleToScale); c == nil || c.Message != "the HPA controller was unable to get the target's current scale: gone" {
		t.Errorf("AbleToScale %+v", c)
	}
}

// treatMissingAs Zero reads an empty answer of an External metric as 0;
// without it, or for a failed (not empty) answer, the metric fails.
func TestMissingAsZero(t *testing.T) {
	empty := func(emptyAnswer bool) Reading {
		r := external(0)
		r.Values, r.FetchErr, r.Empty = nil, errors.New("no metrics returned"), emptyAnswer
		return r
	}
	for _, tc := range []struct {
		name          string
		zero, isEmpty bool
		failed        bool
	}{
		{"zero, empty answer", true, true, false},
		{"zero, failed answer", true, false, true},
		{"no option", false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Memory
			in := input(&h, 2, empty(tc.isEmpty))
			in.Spec.MetricOptions = []MetricOptions{{MissingAsZero: tc.zero}}
			res := Evaluate(in, nil)
			m := res.Metrics[0]
			if failed := m.Evaluated.Proposal.Err != nil; failed != tc.failed {
				t.Fatalf("failed %v (%v), want %v", failed, m.Evaluated.Proposal.Err, tc.failed)
			}
			if !tc.failed && (m.Reading.Values[0] != 0 || m.Reading.FetchErr != nil) {
				t.Errorf("reading %+v", m.Reading)
			}
			if tc.failed && m.Reading.Err == nil {
				t.Error("the failed read is not worded")
			}
		})
	}
}

// ClusterProportional metrics propose from the cluster's size, after the
// HPA metrics, and keep their status.
func TestProportional(t *testing.T) {
	var h Memory
	in := input(&h, 1)
	in.Spec.Proportional = []ProportionalSource{{Index: 0, Source: v1alpha1.ClusterProportionalSource{
		Linear: &v1alpha1.LinearParams{NodesPerReplica: 2, Min: 1, Max: 100},
	}}}
	in.Proportional = []ProportionalReading{{Size: proportional.ClusterSize{Nodes: 6, Cores: 24, SchedulableNodes: 6, SchedulableCores: 24}}}
	res := Evaluate(in, written(start, nil))
	if !res.Write || res.Desired != 3 {
		t.Fatalf("6 nodes at 2 per replica: desired %d write %v (%v)", res.Desired, res.Write, res.Decision.Err)
	}
	if !res.ProportionalChanged || res.ProportionalStatus[0].Replicas != 3 || res.ProportionalStatus[0].Nodes != 6 {
		t.Errorf("proportional status %+v", res.ProportionalStatus)
	}
	if len(res.Metrics) != 1 || res.Metrics[0].Name != "cluster-proportional linear" {
		t.Errorf("metrics %+v", res.Metrics)
	}
	in.Proportional = []ProportionalReading{{SelectorErr: errors.New("invalid nodeSelector: bad")}}
	if res := Evaluate(in, nil); !res.Decision.Failed {
		t.Errorf("a failed reading decided %+v", res.Decision)
	}
}

func TestFromAutoscaler(t *testing.T) {
	act := resource.MustParse("5")
	spec := &v1alpha1.AutoscalerSpec{
		MaxReplicas: 3, DryRun: true,
		Fallback: &v1alpha1.FallbackSpec{After: &metav1.Duration{Duration: time.Minute}},
		Metrics: []v1alpha1.MetricSpec{
			{MetricSpec: external(1).Spec, Activation: &act, TreatMissingAs: v1alpha1.MissingAsZero},
			{MetricSpec: autoscalingv2.MetricSpec{Type: v1alpha1.ClusterProportionalMetricSourceType},
				ClusterProportional: &v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}}},
		},
	}
	s := FromAutoscaler(spec)
	if !s.Extensions.DryRun || s.Extensions.Fallback.Policy != FallbackHold || s.Extensions.Fallback.After != time.Minute {
		t.Errorf("extensions %+v", s.Extensions)
	}
	if len(s.MetricOptions) != 1 || !s.MetricOptions[0].MissingAsZero || s.MetricOptions[0].Activation.Cmp(act) != 0 {
		t.Errorf("metric options %+v", s.MetricOptions)
	}
	if MinReplicas(&s.HPA) != 1 || len(s.HPA.Metrics) != 1 {
		t.Errorf("HPA spec %+v", s.HPA)
	}
	if len(s.Proportional) != 1 || s.Proportional[0].Index != 1 {
		t.Errorf("proportional %+v", s.Proportional)
	}
}

// The record's time is when the observation completed (ReadAt), so a
// sample read during the observation is never newer than the decision;
// without ReadAt it is Now.
func TestRecordTimeIsReadAt(t *testing.T) {
	var h Memory
	rd := external(60_000)
	rd.Timestamp = start.Add(2 * time.Second) // read after the evaluation started
	in := input(&h, 2, rd)
	in.ReadAt = start.Add(3 * time.Second)
	res := Evaluate(in, nil)
	rec := res.Record()
	if !rec.Time.Time.Equal(in.ReadAt) {
		t.Errorf("record time %v, want ReadAt %v", rec.Time.Time, in.ReadAt)
	}
	if len(rec.Metrics) != 1 || rec.Metrics[0].Timestamp == nil || rec.Time.Before(rec.Metrics[0].Timestamp) {
		t.Errorf("record metrics %+v at %v: want one sample not newer than the decision", rec.Metrics, rec.Time)
	}
	var h2 Memory
	in = input(&h2, 2, external(60_000))
	if res := Evaluate(in, nil); !res.Record().Time.Time.Equal(start) {
		t.Errorf("without ReadAt the record time is %v, want Now %v", res.Record().Time.Time, start)
	}
}
