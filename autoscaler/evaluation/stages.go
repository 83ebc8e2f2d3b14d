package evaluation

import (
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// stages are the stages of one evaluation, declared once, in the order they
// run (Evaluate runs them; each one's doc comment is in its file). Each
// takes the running proposal and returns the next one with the steps it
// adds to the decision record, so the record's steps come in this order.
//
// Upstream's stages (Bounds, Metrics, Behavior, ScaleFromZero) always run;
// those of an extension only when the spec sets it (or, for Schedule,
// Paused and DryRun, when the status still holds its condition, to turn it
// False): with none set an evaluation runs upstream's decision alone. The
// extensions that change the proposal run before the behavior, so what
// they propose is stabilized and paced like any proposal; Paused and DryRun
// act on the decided count and only hold back the write.
var stages = [...]stage{
	{StageBounds, nil, (*Result).gate, []string{StageScalingDisabled, StageMinReplicas, StageMaxReplicas}}, // decide.go
	{stageMetrics, nil, (*Result).metrics, []string{StageTolerance}},                                       // decide.go, propose.go, proportional.go
	{StageFallback, (*Result).wantsFallback, (*Result).fallback, []string{StageFallback}},                  // fallback_activation.go
	{StageActivation, (*Result).wantsActivation, (*Result).activation, []string{StageActivation}},          // fallback_activation.go
	{StageForecast, (*Result).wantsForecast, (*Result).forecast, []string{StageForecast}},                  // forecast.go
	{StageSchedule, (*Result).wantsSchedule, (*Result).schedule, []string{StageSchedule}},                  // schedule.go
	{stageBehavior, nil, (*Result).normalize, behaviorSteps},                                               // decide.go
	{StageScaleFromZero, nil, (*Result).fromZero, []string{StageScaleFromZero}},                            // decide.go
	{StagePaused, (*Result).wantsPaused, (*Result).paused, []string{StagePaused}},                          // holds.go
	{StageDryRun, (*Result).wantsDryRun, (*Result).dryRun, []string{StageDryRun}},                          // holds.go
	{stageWrite, nil, (*Result).writeScale, nil},                                                           // evaluation.go
}

// stage is one stage of an evaluation.
type stage struct {
	// name names the stage.
	name string
	// wanted reports whether the spec calls for the stage (nil: always); a
	// stage not wanted is not entered.
	wanted func(*Result) bool
	// run takes the running proposal and returns the next one, and the
	// steps of the record it adds.
	run func(*Result, proposal) (proposal, []v1alpha1.DecisionStep)
	// records are the stages of the steps run may add.
	records []string
}

// Names of the stages that are not also the stage of a step.
const (
	stageMetrics  = "Metrics"
	stageBehavior = "Behavior"
	stageWrite    = "Write"
)

// proposal is the running proposal the stages hand on.
type proposal struct {
	// Replicas is the count proposed so far; once Decided, the decided
	// count (Decision.Desired).
	Replicas int32
	// Usable is false while no scaling may come of the proposal: the
	// metrics allow no decision (upstream keeps the count and reports the
	// failure). An extension that sets a count makes it usable.
	Usable bool
	// Hold keeps the current count without the behavior (a fallback's
	// Hold).
	Hold bool
	// Override is the extension that set Replicas last; nil: the metrics'
	// proposal.
	Override *Override
	// Decided is true once the count is decided: the stages that change a
	// proposal pass it on.
	Decided bool
	// Write is true while the decided count is to be written (a rescale no
	// stage held back); Held says why one is not ("", HoldPaused,
	// HoldDryRun).
	Write bool
	Held  string
}

// override is p replaced by an extension's o, and its step: from p's count
// to o's, with o's message.
func (p proposal) override(o *Override) (proposal, []v1alpha1.DecisionStep) {
	next := proposal{Replicas: o.Replicas, Usable: true, Hold: o.Hold, Override: o}
	return next, []v1alpha1.DecisionStep{step(o.Stage, p.Replicas, o.Replicas, o.Message)}
}

// decided is the proposal of a decided count, to be written when write.
func decided(desired int32, write bool) proposal {
	return proposal{Replicas: desired, Usable: true, Decided: true, Write: write}
}

// step is a step of the record, its message bounded.
func step(stage string, from, to int32, message string) v1alpha1.DecisionStep {
	return v1alpha1.DecisionStep{Stage: stage, From: from, To: to, Message: cut(message)}
}

// run runs the stages the spec wants on r, in order, from the current
// count.
func (r *Result) run() {
	p := proposal{Replicas: r.bounds.CurrentReplicas}
	for i := range stages {
		s := &stages[i]
		if s.wanted != nil && !s.wanted(r) {
			continue
		}
		var steps []v1alpha1.DecisionStep
		p, steps = s.run(r, p)
		r.steps = append(r.steps, steps...)
	}
}

// What the spec sets, so that an evaluation enters an extension's file only
// when the spec calls for it (input.go: Spec.HasForecast,
// Spec.hasActivation).

func (r *Result) wantsFallback() bool { return r.in.Spec.Extensions.Fallback != nil }

func (r *Result) wantsActivation() bool {
	return r.bounds.MinReplicas == 0 && r.in.Spec.hasActivation()
}

func (r *Result) wantsForecast() bool { return r.in.Spec.HasForecast() }

func (r *Result) wantsSchedule() bool {
	return len(r.in.Spec.Schedules) > 0 || hasCondition(r.Status, ConditionSchedule)
}

func (r *Result) wantsPaused() bool {
	return r.in.Spec.Extensions.Paused || hasCondition(r.Status, ConditionPaused)
}

func (r *Result) wantsDryRun() bool {
	return r.in.Spec.Extensions.DryRun || hasCondition(r.Status, ConditionDryRun)
}
