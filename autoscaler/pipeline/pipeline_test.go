package pipeline

import (
	"errors"
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/autoscaler/adjust"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/decision"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func external(value int64) decision.Reading {
	q := resource.MustParse("10")
	return decision.Reading{
		Spec: autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
		}},
		Values: []int64{value}, Timestamp: now,
	}
}

func request(current int32, readings ...decision.Reading) Request {
	minR := int32(1)
	r := Request{
		Spec:     Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 20}},
		Bounds:   decision.Bounds{CurrentReplicas: current, MinReplicas: 1, MaxReplicas: 20, HasObjectOrExternal: true},
		Shared:   decision.Shared{SpecReplicas: current, StatusReplicas: current, Tolerances: replicas.UniformTolerances(0.1)},
		Readings: readings, DownscaleStabilization: 5 * time.Minute, Now: now,
	}
	for _, rd := range readings {
		r.Spec.HPA.Metrics = append(r.Spec.HPA.Metrics, rd.Spec)
	}
	r.Gate = decision.Check(r.Bounds)
	return r
}

// Evaluate seeds and keeps the history, and a Scratch changes nothing but
// where the buffers come from.
func TestEvaluate(t *testing.T) {
	var h History
	dec, adj := Evaluate(request(2, external(60_000)), &h, now)
	if !adj.Write || adj.Desired != 4 || dec.D.Desired != 4 {
		t.Fatalf("60 messages at 10 per replica from 2: desired %d write %v, want the limit 4", dec.D.Desired, adj.Write)
	}
	if len(h.Recommendations) == 0 {
		t.Error("no recommendation kept")
	}
	h.Rescaled(&autoscalingv2.HorizontalPodAutoscalerBehavior{}, 2, 4, now)
	if len(h.Events.Up) != 1 || h.Events.Up[0].Change != 2 {
		t.Errorf("scale events %+v", h.Events)
	}
	var scratch Scratch
	for _, v := range []int64{60_000, 5_000, 200_000} {
		plain := Decide(request(4, external(v)), &h)
		r := request(4, external(v))
		r.Scratch = &scratch
		reused := Decide(r, &h)
		if plain.D.Desired != reused.D.Desired || !reflect.DeepEqual(plain.Statuses, reused.Statuses) {
			t.Errorf("value %d: %d without scratch, %d with", v, plain.D.Desired, reused.D.Desired)
		}
	}
}

// A failed observation decides nothing and keeps the extensions' state.
func TestDecideInputsError(t *testing.T) {
	h := History{Extensions: adjust.State{IdleSince: now}}
	r := request(3, external(1))
	r.InputsErr = errors.New("selector is required")
	dec := Decide(r, &h)
	if !dec.D.Failed || dec.D.Desired != 3 || !dec.Ext.State.IdleSince.Equal(now) {
		t.Errorf("decision %+v", dec.D)
	}
}

func TestFromAutoscaler(t *testing.T) {
	act := resource.MustParse("5")
	spec := &v1alpha1.AutoscalerSpec{
		MaxReplicas: 3, DryRun: true,
		Fallback: &v1alpha1.FallbackSpec{After: &metav1.Duration{Duration: time.Minute}},
		Metrics: []v1alpha1.MetricSpec{
			{MetricSpec: external(1).Spec, Activation: &act, TreatMissingAs: v1alpha1.MissingAsZero},
		},
	}
	s := FromAutoscaler(spec)
	if !s.Extensions.DryRun || s.Extensions.Fallback.Policy != adjust.FallbackHold || s.Extensions.Fallback.After != time.Minute {
		t.Errorf("extensions %+v", s.Extensions)
	}
	if len(s.MetricOptions) != 1 || !s.MetricOptions[0].MissingAsZero || s.MetricOptions[0].Activation.Cmp(act) != 0 {
		t.Errorf("metric options %+v", s.MetricOptions)
	}
	if MinReplicas(&s.HPA) != 1 || len(s.HPA.Metrics) != 1 {
		t.Errorf("HPA spec %+v", s.HPA)
	}
}
