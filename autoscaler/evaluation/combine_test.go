package evaluation

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

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
			got := Combine(tc.proposals, tc.spec)
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
	if got := Combine([]Proposal{ok("cpu", 4)}, 3); got.ScalingActive.Message != "the HPA was able to successfully calculate a replica count from cpu" {
		t.Errorf("message = %q", got.ScalingActive.Message)
	}
}
