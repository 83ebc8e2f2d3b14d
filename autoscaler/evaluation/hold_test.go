package evaluation

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

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
			want:       held{Desired: 7, Rescale: true, Hold: HoldPaused, Steps: []extensionStep{{Stage: StagePaused, From: 7, To: 3, Message: "paused: the scale is not written"}}},
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
			want:       held{Desired: 7, Rescale: true, Hold: HoldDryRun, Steps: []extensionStep{{Stage: StageDryRun, From: 7, To: 3, Message: "dry run: the scale is not written"}}},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionFalse, "DryRun": corev1.ConditionTrue},
			events:     []string{"Normal DryRunRescale would scale from 3 to 7"},
		},
		{
			name:       "paused wins over dry run: no DryRunRescale event",
			in:         holdInput{Spec: Extensions{Paused: true, DryRun: true}, CurrentReplicas: 4, Desired: 2, Rescale: true},
			want:       held{Desired: 2, Rescale: true, Hold: HoldPaused, Steps: []extensionStep{{Stage: StagePaused, From: 2, To: 4, Message: "paused: the scale is not written"}}},
			conditions: map[string]corev1.ConditionStatus{"Paused": corev1.ConditionTrue, "DryRun": corev1.ConditionTrue},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := applyHolds(tc.in)
			conds, events := got.Conditions, got.Events
			got.Conditions, got.Events = nil, nil
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
