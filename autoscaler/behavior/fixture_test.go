package behavior

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func testNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

func ago(d time.Duration) time.Time { return testNow().Add(-d) }

func ptr[T any](v T) *T { return &v }

// rules mirrors upstream's generateScalingRules: a Pods policy when pods is
// non-zero, a Percent policy when percent is non-zero, selectPolicy Max.
func rules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	r := &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr(window),
		SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
	}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// uniformEvents mirrors upstream's generateEventsUniformDistribution: the
// events sit in the middle of equal segments of the last periodSeconds.
func uniformEvents(changes []int32, periodSeconds int) []ScaleEvent {
	events := make([]ScaleEvent, len(changes))
	segment := float64(periodSeconds) / float64(len(changes))
	for i, c := range changes {
		boundary := time.Duration(float64(periodSeconds) - segment*float64(i+1) + segment/2)
		events[i] = ScaleEvent{Change: c, Timestamp: testNow().Add(-time.Second * boundary)}
	}
	return events
}

func recs(pairs ...any) []Recommendation {
	out := make([]Recommendation, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Recommendation{Replicas: int32(pairs[i].(int)), Timestamp: ago(pairs[i+1].(time.Duration))})
	}
	return out
}

func values(rs []Recommendation) []int32 {
	out := make([]int32, len(rs))
	for i, r := range rs {
		out[i] = r.Replicas
	}
	return out
}
