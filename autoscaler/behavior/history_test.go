package behavior

import (
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Cases from upstream TestStoreScaleEvents, for both directions.
func TestRecordScaleEvent(t *testing.T) {
	type ev struct {
		change   int32
		outdated bool
	}
	cases := []struct {
		name       string
		prev       []ScaleEvent
		rules      *autoscalingv2.HPAScalingRules
		wantChange int32 // changeInPeriod(60) before recording
		want       []ev
	}{
		{name: "empty entries with default behavior", want: nil},
		{name: "empty entries with two-policy-behavior", rules: rules(10, 60, 100, 60, 0), want: []ev{{5, false}}},
		{name: "one outdated entry to be kept untouched without behavior",
			prev: []ScaleEvent{{Change: 7, Timestamp: ago(61 * time.Second)}}, want: []ev{{7, false}}},
		{name: "one outdated entry to be replaced with behavior", rules: rules(10, 60, 100, 60, 0),
			prev: []ScaleEvent{{Change: 7, Timestamp: ago(61 * time.Second)}}, want: []ev{{5, false}}},
		{name: "one actual entry to be not touched with behavior", rules: rules(10, 60, 100, 60, 0),
			prev: []ScaleEvent{{Change: 7, Timestamp: ago(58 * time.Second)}}, wantChange: 7, want: []ev{{7, false}, {5, false}}},
		{name: "two entries, one of them to be replaced", rules: rules(10, 60, 0, 0, 0),
			prev:       []ScaleEvent{{Change: 7, Timestamp: ago(61 * time.Second)}, {Change: 6, Timestamp: ago(59 * time.Second)}},
			wantChange: 6, want: []ev{{5, false}, {6, false}}},
		{name: "replace one entry, use policies with different periods", rules: rules(10, 60, 100, 30, 0),
			prev: []ScaleEvent{
				{Change: 8, Timestamp: ago(29 * time.Second)}, {Change: 6, Timestamp: ago(59 * time.Second)},
				{Change: 7, Timestamp: ago(61 * time.Second)}, {Change: 9, Timestamp: ago(61 * time.Second)},
			},
			wantChange: 14, want: []ev{{8, false}, {6, false}, {7, true}, {5, false}}},
		{name: "two entries, both actual", rules: rules(10, 120, 100, 30, 0),
			prev:       []ScaleEvent{{Change: 7, Timestamp: ago(58 * time.Second)}, {Change: 6, Timestamp: ago(59 * time.Second)}},
			wantChange: 13, want: []ev{{7, false}, {6, false}, {5, false}}},
		// The outdated mark is sticky: an entry marked under a shorter period
		// is reused even after the policy period grew.
		{name: "sticky outdated mark", rules: rules(10, 120, 0, 0, 0),
			prev:       []ScaleEvent{{Change: 3, Timestamp: ago(90 * time.Second), Outdated: true}, {Change: 2, Timestamp: ago(10 * time.Second)}},
			wantChange: 2, want: []ev{{5, false}, {2, false}}},
	}
	for _, tc := range cases {
		for _, dir := range []string{"up", "down"} {
			t.Run(tc.name+"/"+dir, func(t *testing.T) {
				if got := changeInPeriod(60, tc.prev, testNow()); got != tc.wantChange {
					t.Errorf("change in last 60s = %d, want %d", got, tc.wantChange)
				}
				var b *autoscalingv2.HorizontalPodAutoscalerBehavior
				events, next := ScaleEvents{Up: slices.Clone(tc.prev)}, int32(15)
				if dir == "down" {
					events, next = ScaleEvents{Down: slices.Clone(tc.prev)}, 5
				}
				if tc.rules != nil {
					b = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.rules}
					if dir == "down" {
						b = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: tc.rules}
					}
				}
				before := slices.Clone(tc.prev)
				got := RecordScaleEvent(b, events, 10, next, testNow())
				list, other := got.Up, got.Down
				if dir == "down" {
					list, other = got.Down, got.Up
				}
				if len(other) != 0 {
					t.Errorf("the other direction changed: %v", other)
				}
				if len(list) != len(tc.want) {
					t.Fatalf("got %d events %+v, want %d", len(list), list, len(tc.want))
				}
				for i, e := range list {
					if e.Change != tc.want[i].change || e.Outdated != tc.want[i].outdated {
						t.Errorf("event %d = %+v, want %+v", i, e, tc.want[i])
					}
				}
				if !slices.Equal(tc.prev, before) {
					t.Errorf("input events were modified")
				}
			})
		}
	}
}

func TestDefault(t *testing.T) {
	if Default(nil, time.Minute) != nil {
		t.Fatal("nil behavior must stay nil")
	}
	tol := resource.MustParse("0.05")
	minPolicy := autoscalingv2.MinChangePolicySelect
	cases := []struct {
		name   string
		in     *autoscalingv2.HorizontalPodAutoscalerBehavior
		window time.Duration
		want   *autoscalingv2.HorizontalPodAutoscalerBehavior
	}{
		{name: "empty behavior takes upstream defaults", in: &autoscalingv2.HorizontalPodAutoscalerBehavior{},
			window: DefaultDownscaleStabilizationWindow, want: defaults(0, 300)},
		{name: "downscale flag truncates to seconds", in: &autoscalingv2.HorizontalPodAutoscalerBehavior{},
			window: 90*time.Second + 900*time.Millisecond, want: defaults(0, 90)},
		{name: "set fields are kept, unset are filled", window: DefaultDownscaleStabilizationWindow,
			in: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(60)), Tolerance: &tol},
				ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &minPolicy, Policies: []autoscalingv2.HPAScalingPolicy{}},
			},
			want: func() *autoscalingv2.HorizontalPodAutoscalerBehavior {
				d := defaults(60, 300)
				d.ScaleUp.Tolerance = &tol
				d.ScaleDown.SelectPolicy = &minPolicy
				d.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{}
				return d
			}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.in.DeepCopy()
			got := Default(tc.in, tc.window)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v / %+v, want %+v / %+v", got.ScaleUp, got.ScaleDown, tc.want.ScaleUp, tc.want.ScaleDown)
			}
			if !equality.Semantic.DeepEqual(tc.in, before) {
				t.Errorf("input was modified")
			}
			if tc.in.ScaleUp != nil && tc.in.ScaleUp.StabilizationWindowSeconds != nil && got.ScaleUp.StabilizationWindowSeconds == tc.in.ScaleUp.StabilizationWindowSeconds {
				t.Errorf("result shares memory with the input")
			}
		})
	}
}

func defaults(upWindow, downWindow int32) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr(upWindow), SelectPolicy: &maxPolicy,
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
			},
		},
		ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr(downWindow), SelectPolicy: &maxPolicy,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
		},
	}
}
