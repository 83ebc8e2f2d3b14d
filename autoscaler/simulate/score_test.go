package simulate

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

func TestScoreOf(t *testing.T) {
	// Needed 2 2 5 5 1 -1 1; the replay held 2 2 2 5 5 5 1 with 2 2 2 2 5 5 1
	// ready. Steps of 10 s; pods start in 15 s, so the oracle looks two
	// steps ahead: 5 5 5 5 1 1 1 within [1, 4].
	needed := []int32{2, 2, 5, 5, 1, -1, 1}
	replicasHeld := []int32{2, 2, 2, 5, 5, 5, 1}
	ready := []int32{2, 2, 2, 2, 5, 5, 1}
	steps := make([]Step, len(needed))
	for i := range steps {
		steps[i] = Step{Needed: needed[i], Replicas: replicasHeld[i], Ready: ready[i]}
	}
	s := ScoreOf(steps, 10*time.Second, 15*time.Second, 1, 4)
	h := (10 * time.Second).Hours()
	want := Score{
		Scored:          true,
		ShortPodSeconds: (3 + 3) * 10,
		ReplicaHours:    22 * h,
		// The oracle holds min(5, 4) for four steps, then 1: 4×4 + 3.
		Oracle: OracleScore{ShortPodSeconds: (1 + 1) * 10, ReplicaHours: 19 * h},
	}
	if !near(s.ShortPodSeconds, want.ShortPodSeconds) || !near(s.ReplicaHours, want.ReplicaHours) ||
		!near(s.Oracle.ShortPodSeconds, want.Oracle.ShortPodSeconds) || !near(s.Oracle.ReplicaHours, want.Oracle.ReplicaHours) || !s.Scored {
		t.Errorf("score %+v, want %+v", s, want)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// A load that jumps from 4 pods' worth to 10: the reactive replay is short
// 6 pods for the start-up of the new pods; the oracle, which starts them a
// minute (4 steps) ahead, is never short and pays for those 4 steps.
func TestRunScoresAgainstTheOracle(t *testing.T) {
	cfg := config(40, 4)
	cfg.PodStartup = time.Minute
	load := constant(40, 4*1000)
	for i := 20; i < 40; i++ {
		load.Values[i] = 10 * 1000
	}
	res := run(t, cfg, fastUp(spec(1, 20, podsMetric("rps", 1000))), load)
	s := res.Summary.Score
	if !s.Scored || !near(s.ShortPodSeconds, 6*60) {
		t.Errorf("short %v pod-seconds, want 6 pods × 60 s", s.ShortPodSeconds)
	}
	if h := (16*4 + 24*10) * (15 * time.Second).Hours(); s.Oracle.ShortPodSeconds != 0 || !near(s.Oracle.ReplicaHours, h) {
		t.Errorf("oracle %+v, want never short over %v replica-hours", s.Oracle, h)
	}
	if res.Steps[19].Needed != 4 || res.Steps[20].Needed != 10 {
		t.Errorf("needed %d then %d, want 4 then 10", res.Steps[19].Needed, res.Steps[20].Needed)
	}
}

// A Value target states no per-pod load: nothing is scored.
func TestScoreNeedsAPerPodTarget(t *testing.T) {
	m := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: milli(1000)},
	}}
	res := run(t, config(10, 2), spec(1, 10, m), constant(10, 5000))
	if res.Summary.Score.Scored || res.Steps[0].Needed != -1 {
		t.Errorf("scored a Value target: %+v, needed %d", res.Summary.Score, res.Steps[0].Needed)
	}
}
