package cli

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

func TestWithWarmup(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	shown := simsource.Range{Start: at, End: at.Add(time.Hour), Step: 15 * time.Second}
	rng, k, err := withWarmup(shown, 40*time.Second) // rounded up to 3 steps
	if err != nil || k != 3 || !rng.Start.Equal(at.Add(-45*time.Second)) || !rng.End.Equal(shown.End) {
		t.Errorf("range %+v, %d steps, %v", rng, k, err)
	}
	if rng, k, _ := withWarmup(shown, 0); k != 0 || rng != shown {
		t.Errorf("no warm-up changed the range: %+v %d", rng, k)
	}
	if _, _, err := withWarmup(shown, 200*24*time.Hour); err == nil || !strings.Contains(err.Error(), "--warmup") {
		t.Errorf("a warm-up beyond MaxSteps: %v", err)
	}
}

// The warm-up's steps are neither shown nor summarized nor scored.
func TestTrimWarmup(t *testing.T) {
	minR := int32(1)
	spec := evaluation.Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 10}}
	steps := []simulate.Step{
		{Replicas: 8, Current: 1, Ready: 1, Needed: 8, Rescaled: true}, // warm-up
		{Replicas: 8, Current: 8, Ready: 8, Needed: 8},
		{Replicas: 8, Current: 8, Ready: 8, Needed: 9},
	}
	r := replayed{spec: namedSpec{spec: spec}, result: simulate.Result{Steps: steps}, actual: []int64{1, 2, 3}}
	got := trimWarmup(r, 1, time.Minute, 0)
	s := got.result.Summary
	if len(got.result.Steps) != 2 || s.ScaleUps != 0 || s.MinReplicas != 8 || s.Score.ShortPodSeconds != 60 || len(got.actual) != 2 || got.actual[0] != 2 {
		t.Errorf("trimmed %+v, actual %v", s, got.actual)
	}
}
