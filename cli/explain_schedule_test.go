package cli

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// explain shows the schedule holding the floor in the header and its step
// among the steps; without an active schedule the header has no such line.
func TestRenderTableSchedule(t *testing.T) {
	floor := "schedule sale holds the floor at 12 replicas until 2026-11-23T13:00:00Z"
	rec := &v1alpha1.DecisionRecord{
		Time: metav1.NewTime(decisionTime), Outcome: v1alpha1.OutcomeScaledUp, CurrentReplicas: 2,
		Proposal: ptr.To[int32](2), WinningMetric: "queue",
		Steps: []v1alpha1.DecisionStep{
			{Stage: "Schedule", From: 2, To: 12, Message: floor},
			{Stage: "ScaleUpPolicy", From: 12, To: 6, Message: "the desired replica count is increasing faster than the maximum scale rate"},
		},
		DesiredReplicas: 6, Scaled: true,
	}
	conds := []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: "Schedule", Status: corev1.ConditionTrue, Reason: "ScheduleActive", Message: floor},
	}
	out := renderTable(decisionView{Kind: "Autoscaler", Namespace: "shop", Name: "web", Target: "Deployment/web", Record: rec, Conditions: conds},
		decisionTime.Add(time.Minute))
	for _, want := range []string{
		"Schedule:    " + floor + "\n",
		"  Schedule       2 → 12     " + floor + "\n",
		"  Schedule  True    ScheduleActive  " + floor + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	conds[0].Status, conds[0].Reason, conds[0].Message = corev1.ConditionFalse, "NoScheduleActive", "no schedule holds a floor"
	out = renderTable(decisionView{Kind: "Autoscaler", Namespace: "shop", Name: "web", Record: rec, Conditions: conds}, decisionTime)
	if strings.Contains(out, "Schedule:  ") {
		t.Errorf("inactive schedule in the header:\n%s", out)
	}
}
