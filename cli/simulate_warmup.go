package cli

import (
	"fmt"
	"time"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/simulate"
	simsource "github.com/ebbflow/ebbflow/autoscaler/simulate/source"
)

// withWarmup returns the range to read and replay for shown with a warm-up
// of warmup before it (whole steps, rounded up), and the number of steps
// of the warm-up.
func withWarmup(shown simsource.Range, warmup time.Duration) (simsource.Range, int, error) {
	if warmup <= 0 {
		return shown, 0, nil
	}
	k := int((warmup + shown.Step - 1) / shown.Step)
	rng := shown
	rng.Start = shown.Start.Add(-time.Duration(k) * shown.Step)
	if n := rng.Steps(); n > simulate.MaxSteps {
		return rng, 0, fmt.Errorf("the range with its --warmup holds %d steps, more than %d: use a longer --step or a shorter warm-up", n, simulate.MaxSteps)
	}
	return rng, k, nil
}

// trimWarmup drops the first k steps (the warm-up) of r and summarizes and
// scores the rest, taken every step with pods starting in startup.
func trimWarmup(r replayed, k int, step, startup time.Duration) replayed {
	if k <= 0 || k > len(r.result.Steps) {
		return r
	}
	steps := r.result.Steps[k:]
	hpa := &r.spec.spec.HPA
	sum := simulate.Summarize(steps, step)
	sum.Score = simulate.ScoreOf(steps, step, startup, evaluation.MinReplicas(hpa), hpa.MaxReplicas)
	r.result = simulate.Result{Steps: steps, Summary: sum}
	if len(r.actual) > k {
		r.actual = r.actual[k:]
	}
	return r
}
