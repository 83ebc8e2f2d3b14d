package evaluation

import (
	"errors"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/behavior"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func decideNow() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) }

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		in   Bounds
		want Gate
	}{
		{"within bounds", Bounds{CurrentReplicas: 3, MinReplicas: 1, MaxReplicas: 5}, Gate{Action: ComputeMetrics}},
		{"above max", Bounds{CurrentReplicas: 9, MinReplicas: 1, MaxReplicas: 5}, Gate{ClampToBounds, 5, ReasonAboveMax}},
		{"below min", Bounds{CurrentReplicas: 1, MinReplicas: 2, MaxReplicas: 5}, Gate{ClampToBounds, 2, ReasonBelowMin}},
		// Upstream TestScaleToZeroBehavior.
		{"manual scale to zero disables", Bounds{CurrentReplicas: 0, MinReplicas: 1, MaxReplicas: 6}, Gate{Action: ScalingDisabled}},
		{"from zero without condition is disabled even with minReplicas 0", Bounds{MaxReplicas: 6, HasObjectOrExternal: true}, Gate{Action: ScalingDisabled}},
		{"from zero with condition and object metric", Bounds{MaxReplicas: 6, ScaledToZero: true, HasObjectOrExternal: true}, Gate{Action: ComputeMetrics}},
		{"from zero with condition but only pod metrics", Bounds{MaxReplicas: 6, ScaledToZero: true}, Gate{Action: ScalingDisabled}},
		{"minReplicas raised after scale to zero", Bounds{MinReplicas: 2, MaxReplicas: 6, ScaledToZero: true}, Gate{Action: ComputeMetrics}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check(tc.in); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	norm := behavior.Request{DownscaleStabilizationWindow: behavior.DefaultDownscaleStabilizationWindow, Now: decideNow()}
	cases := []struct {
		name      string
		in        decideInput
		want      int32
		rescale   bool
		failed    bool
		reason    string
		active    string
		limitedOn string
	}{
		{name: "scale up", in: decideInput{Bounds: Bounds{CurrentReplicas: 3, MinReplicas: 2, MaxReplicas: 6},
			Proposals: []Proposal{ok("cpu resource utilization (percentage of request)", 5)}, Normalize: norm},
			want: 5, rescale: true, reason: "cpu resource utilization (percentage of request) above target", active: "ValidMetricFound", limitedOn: behavior.ReasonDesiredWithinRange},
		{name: "scale down stabilized by seeded history", in: decideInput{Bounds: Bounds{CurrentReplicas: 5, MinReplicas: 1, MaxReplicas: 6},
			Proposals: []Proposal{ok("cpu", 2)}, Normalize: withHistory(norm, behavior.SeedRecommendations(nil, 5, decideNow()))},
			want: 5, rescale: false, reason: ReasonAllMetricsBelow, active: "ValidMetricFound", limitedOn: behavior.ReasonDesiredWithinRange},
		{name: "above max clamps without metrics", in: decideInput{Bounds: Bounds{CurrentReplicas: 9, MinReplicas: 1, MaxReplicas: 6}},
			want: 6, rescale: true, reason: ReasonAboveMax},
		{name: "disabled at zero", in: decideInput{Bounds: Bounds{CurrentReplicas: 0, MinReplicas: 1, MaxReplicas: 6}},
			want: 0, active: "ScalingDisabled"},
		{name: "failed metrics do not scale", in: decideInput{Bounds: Bounds{CurrentReplicas: 5, MinReplicas: 1, MaxReplicas: 6},
			Proposals: []Proposal{ok("cpu", 2), bad("x")}, Normalize: norm}, failed: true, active: "Failed-x"},
		// Upstream "scale down to zero external metric with HPAScaleToZero enabled".
		{name: "scale to zero with minReplicas 0", in: decideInput{Bounds: Bounds{CurrentReplicas: 5, MinReplicas: 0, MaxReplicas: 6, HasObjectOrExternal: true},
			Proposals: []Proposal{ok("external metric qps", 0)}, Normalize: norm},
			want: 0, rescale: true, reason: ReasonAllMetricsBelow, active: "ValidMetricFound", limitedOn: behavior.ReasonDesiredWithinRange},
		// Upstream "minReplicas increased with ScaledToZero condition": from
		// zero the proposal of 1 is raised to minReplicas 2 (TooFewReplicas).
		{name: "from zero raised to min", in: decideInput{Bounds: Bounds{CurrentReplicas: 0, MinReplicas: 2, MaxReplicas: 6, ScaledToZero: true, HasObjectOrExternal: true},
			Proposals: []Proposal{ok("Deployment metric qps", 1)}, Normalize: withHistory(norm, behavior.SeedRecommendations(nil, 0, decideNow()))},
			want: 2, rescale: true, reason: "Deployment metric qps above target", active: "ValidMetricFound", limitedOn: behavior.ReasonTooFewReplicas},
		// Scaled to zero, metric still at zero: no rescale, status desired 0.
		{name: "stays at zero", in: decideInput{Bounds: Bounds{CurrentReplicas: 0, MinReplicas: 0, MaxReplicas: 6, ScaledToZero: true, HasObjectOrExternal: true},
			Proposals: []Proposal{ok("Deployment metric qps", 0)}, Normalize: norm},
			want: 0, rescale: false, active: "ValidMetricFound", limitedOn: behavior.ReasonDesiredWithinRange},
		// With behavior: the policies limit a scale-up.
		{name: "behavior limits scale up", in: decideInput{Bounds: Bounds{CurrentReplicas: 2, MinReplicas: 1, MaxReplicas: 100},
			Proposals: []Proposal{ok("pods metric qps", 50)},
			Normalize: withBehavior(norm, &autoscalingv2.HorizontalPodAutoscalerBehavior{})},
			want: 6, rescale: true, reason: "pods metric qps above target", active: "ValidMetricFound", limitedOn: behavior.ReasonScaleUpLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.in)
			if got.Failed != tc.failed || got.Rescale != tc.rescale {
				t.Fatalf("failed=%v rescale=%v, want %v %v (%+v)", got.Failed, got.Rescale, tc.failed, tc.rescale, got)
			}
			if !tc.failed && (got.Desired != tc.want || got.RescaleReason != tc.reason) {
				t.Errorf("desired=%d reason=%q, want %d %q", got.Desired, got.RescaleReason, tc.want, tc.reason)
			}
			if tc.active == "" && got.ScalingActive != nil || tc.active != "" && (got.ScalingActive == nil || got.ScalingActive.Reason != tc.active) {
				t.Errorf("ScalingActive = %+v, want %q", got.ScalingActive, tc.active)
			}
			if tc.limitedOn != "" && (got.Outcome == nil || got.Outcome.ScalingLimited.Reason != tc.limitedOn) {
				t.Errorf("outcome = %+v, want ScalingLimited %s", got.Outcome, tc.limitedOn)
			}
			if tc.failed && (got.Err == nil || got.Outcome != nil) {
				t.Errorf("a failed decision must carry the error and not normalize: %+v", got)
			}
		})
	}
}

func withHistory(r behavior.Request, h []behavior.Recommendation) behavior.Request {
	r.Recommendations = h
	return r
}

func withBehavior(r behavior.Request, b *autoscalingv2.HorizontalPodAutoscalerBehavior) behavior.Request {
	r.Behavior = b
	return r
}

func TestScaledToZeroCondition(t *testing.T) {
	cases := []struct {
		current, desired, minR int32
		objExt                 bool
		want                   corev1.ConditionStatus
	}{
		{5, 0, 0, true, corev1.ConditionTrue},
		{5, 0, 0, false, corev1.ConditionFalse},
		{5, 0, 1, true, corev1.ConditionFalse},
		{0, 2, 0, true, corev1.ConditionFalse},
		{3, 5, 1, false, corev1.ConditionFalse},
	}
	for _, tc := range cases {
		got := scaledToZeroCondition(tc.current, tc.desired, tc.minR, tc.objExt)
		if got.Status != tc.want || got.Type != autoscalingv2.ScaledToZero {
			t.Errorf("%+v: got %+v", tc, got)
		}
	}
}

// Upstream TestScaleCPU end to end through the pure packages: 3 pods at
// 300m/500m/700m of 1 core, target 30% → 5 replicas.
func TestDecideFromResourceUtilization(t *testing.T) {
	var pods []replicas.Pod
	samples := replicas.Samples{}
	for i, use := range []int64{300, 500, 700} {
		name := string(rune('a' + i))
		pods = append(pods, replicas.Pod{Name: name, Phase: corev1.PodRunning,
			Ready:     &replicas.ReadyCondition{Status: corev1.ConditionTrue, LastTransitionTime: decideNow().Add(-time.Hour)},
			StartTime: ptrTime(decideNow().Add(-time.Hour)), Containers: []replicas.Container{{Name: "c", Requests: cpuList("1")}}})
		samples[name] = replicas.Sample{Value: use, Timestamp: decideNow().Add(-time.Minute), Window: 30 * time.Second}
	}
	spec := cpuUtilization(30)
	r, err := replicas.ResourceUtilization(replicas.UtilizationInput{CurrentReplicas: 3, TargetUtilization: 30, Resource: corev1.ResourceCPU,
		Tolerances: replicas.UniformTolerances(replicas.DefaultTolerance), Pods: pods, Samples: samples, Timing: replicas.PodTiming{
			CPUInitializationPeriod: replicas.DefaultCPUInitializationPeriod, InitialReadinessDelay: replicas.DefaultInitialReadinessDelay, Now: decideNow()}})
	if err != nil {
		t.Fatal(err)
	}
	d := decide(decideInput{Bounds: Bounds{CurrentReplicas: 3, MinReplicas: 2, MaxReplicas: 6},
		Proposals: []Proposal{success(spec, r.Replicas, r.Timestamp)},
		Normalize: behavior.Request{DownscaleStabilizationWindow: behavior.DefaultDownscaleStabilizationWindow, Now: decideNow()}})
	if !d.Rescale || d.Desired != 5 || r.Utilization != 50 {
		t.Errorf("desired=%d utilization=%d, want 5 and 50", d.Desired, r.Utilization)
	}
}

func ok(metric string, replicas int32) Proposal {
	return Proposal{Metric: metric, Replicas: replicas, Timestamp: time.Unix(int64(replicas), 0)}
}

func bad(msg string) Proposal {
	p := Proposal{Err: errors.New(msg)}
	p.Condition = scalingActive(corev1.ConditionFalse, "Failed-"+msg, msg)
	return p
}

func TestCombine(t *testing.T) {
	cases := []struct {
		name      string
		proposals []Proposal
		spec      int32

		wantReplicas int32
		wantMetric   string
		wantUsable   bool
		wantErr      string
		wantReason   string
	}{
		{name: "max wins", proposals: []Proposal{ok("a", 3), ok("b", 7), ok("c", 5)}, spec: 4,
			wantReplicas: 7, wantMetric: "b", wantUsable: true, wantReason: "ValidMetricFound"},
		{name: "tie keeps the first", proposals: []Proposal{ok("a", 7), ok("b", 7)}, spec: 4,
			wantReplicas: 7, wantMetric: "a", wantUsable: true, wantReason: "ValidMetricFound"},
		{name: "zeros: the last zero names the metric", proposals: []Proposal{ok("a", 0), ok("b", 0)}, spec: 4,
			wantReplicas: 0, wantMetric: "b", wantUsable: true, wantReason: "ValidMetricFound"},
		{name: "zero then positive", proposals: []Proposal{ok("a", 0), ok("b", 2), ok("c", 0)}, spec: 4,
			wantReplicas: 2, wantMetric: "b", wantUsable: true, wantReason: "ValidMetricFound"},
		// Upstream TestScaleUpOneMetricEmpty: one metric fails, the other scales up.
		{name: "one failed, scale up proceeds with error", proposals: []Proposal{ok("cpu", 4), bad("qps")}, spec: 3,
			wantReplicas: 4, wantMetric: "cpu", wantUsable: true, wantReason: "ValidMetricFound",
			wantErr: "invalid metrics (1 invalid out of 2), first error is: qps"},
		// Upstream TestNoScaleDownOneMetricInvalid / TestNoScaleDownOneMetricEmpty.
		{name: "one failed, no scale down", proposals: []Proposal{ok("cpu", 3), bad("cheese")}, spec: 5,
			wantReplicas: 3, wantMetric: "cpu", wantUsable: false, wantReason: "Failed-cheese",
			wantErr: "invalid metrics (1 invalid out of 2), first error is: cheese"},
		{name: "one failed, equal count proceeds", proposals: []Proposal{bad("x"), ok("cpu", 5)}, spec: 5,
			wantReplicas: 5, wantMetric: "cpu", wantUsable: true, wantReason: "ValidMetricFound",
			wantErr: "invalid metrics (1 invalid out of 2), first error is: x"},
		{name: "all failed: first error reported", proposals: []Proposal{bad("first"), bad("second")}, spec: 5,
			wantUsable: false, wantReason: "Failed-first", wantErr: "invalid metrics (2 invalid out of 2), first error is: first"},
		{name: "no metrics", spec: 5, wantUsable: false, wantReason: "NoMetrics", wantErr: ErrNoMetrics.Error()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := combine(tc.proposals, tc.spec)
			if got.Replicas != tc.wantReplicas || got.Metric != tc.wantMetric || got.Usable != tc.wantUsable {
				t.Errorf("got %d/%q/usable=%v, want %d/%q/%v", got.Replicas, got.Metric, got.Usable, tc.wantReplicas, tc.wantMetric, tc.wantUsable)
			}
			if got.ScalingActive.Reason != tc.wantReason {
				t.Errorf("ScalingActive reason = %q, want %q", got.ScalingActive.Reason, tc.wantReason)
			}
			switch {
			case tc.wantErr == "" && got.Err != nil:
				t.Errorf("unexpected error %v", got.Err)
			case tc.wantErr != "" && (got.Err == nil || got.Err.Error() != tc.wantErr):
				t.Errorf("error = %v, want %q", got.Err, tc.wantErr)
			}
			if got.FirstFailure >= 0 && !errors.Is(got.Err, tc.proposals[got.FirstFailure].Err) {
				t.Errorf("error does not wrap the first failure")
			}
		})
	}
	if got := combine([]Proposal{ok("cpu", 4)}, 3); got.ScalingActive.Message != "the HPA was able to successfully calculate a replica count from cpu" {
		t.Errorf("message = %q", got.ScalingActive.Message)
	}
}

// decideInput is what upstream's stages read once the metrics' proposals
// are known.
type decideInput struct {
	Bounds
	Proposals []Proposal
	Normalize behavior.Request
}

// decide runs the declared stages (stages.go) with the metrics' proposals
// given, no extension set: upstream's decision.
func decide(in decideInput) Decision {
	r := &Result{bounds: in.Bounds, request: in.Normalize, proposals: in.Proposals}
	p := proposal{Replicas: in.CurrentReplicas}
	for _, s := range stages {
		if s.wanted != nil && !s.wanted(r) {
			continue
		}
		run := s.run
		if s.name == stageMetrics {
			run = (*Result).combine // the proposals are given
		}
		p, _ = run(r, p)
	}
	return r.Decision
}
