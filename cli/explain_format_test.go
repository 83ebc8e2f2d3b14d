package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// decisionTime is the time of the records the tests build.
var decisionTime = time.Date(2026, 11, 23, 5, 10, 0, 0, time.UTC)

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(decisionTime.Add(d)); return &t }

// scaledUpRecord: two metrics, the queue wins with 10, the scale-up policy
// limits it to 8, the scale is written by the replica evaluatedBy names.
func scaledUpRecord() *v1alpha1.DecisionRecord {
	return &v1alpha1.DecisionRecord{
		Time:            metav1.NewTime(decisionTime),
		Outcome:         v1alpha1.OutcomeScaledUp,
		CurrentReplicas: 4,
		Metrics: []v1alpha1.MetricRecord{
			{Type: "External", Name: "queue_messages_ready", Value: qty("25"), Target: qty("10"),
				TargetType: "AverageValue", Timestamp: at(-3 * time.Second), Replicas: ptr.To[int32](10), Reason: "Proportional"},
			{Type: "Resource", Name: "cpu", Value: qty("45"), Target: qty("80"), TargetType: "Utilization",
				Timestamp: at(-75 * time.Second), Replicas: ptr.To[int32](3), Reason: "Proportional"},
			{Type: "Pods", Name: "http_requests_per_second", Timestamp: at(-time.Second),
				Error: "unable to get metric http_requests_per_second:\nno series"},
		},
		Proposal:      ptr.To[int32](10),
		WinningMetric: "queue_messages_ready",
		Steps: []v1alpha1.DecisionStep{
			{Stage: "ScaleUpPolicy", From: 10, To: 8, Message: "the desired replica count is increasing faster than the maximum scale rate (policies: Pods 4 per 15s; selectPolicy Max)"},
		},
		DesiredReplicas: 8,
		Scaled:          true,
		Error:           "unable to get metric http_requests_per_second: no series",
		EvaluatedBy:     "ebbflow-autoscaler-6c9f7d-x2k4q_0b8e4f6a-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
	}
}

func testConditions() []autoscalingv2.HorizontalPodAutoscalerCondition {
	return []autoscalingv2.HorizontalPodAutoscalerCondition{
		{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 8"},
		{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: "ScaleUpLimit", Message: "the desired replica count is increasing faster than the maximum scale rate"},
	}
}

func TestRenderTable(t *testing.T) {
	dryRun := &v1alpha1.DecisionRecord{
		Time: metav1.NewTime(decisionTime), Outcome: v1alpha1.OutcomeWouldScale, CurrentReplicas: 2,
		Metrics: []v1alpha1.MetricRecord{{Type: "Object", Name: "http_requests_per_second on Service/web",
			Value: qty("120"), Target: qty("20"), TargetType: "Value", Timestamp: at(time.Second),
			Replicas: ptr.To[int32](12), Reason: "Proportional"}},
		Proposal: ptr.To[int32](12), WinningMetric: "http_requests_per_second on Service/web",
		Steps: []v1alpha1.DecisionStep{
			{Stage: "MaxReplicas", From: 12, To: 6, Message: "the desired replica count is more than the maximum replica count"},
			{Stage: "DryRun", From: 6, To: 2, Message: "dry run: the scale is not written"},
		},
		DesiredReplicas: 6, NotScaledReason: "dry run",
		EvaluatedBy: "host\x1b[2J\nname_1",
	}
	failed := &v1alpha1.DecisionRecord{
		Time: metav1.NewTime(decisionTime), Outcome: v1alpha1.OutcomeFailed, CurrentReplicas: 3, DesiredReplicas: 3,
		NotScaledReason: "the evaluation failed", Error: "deployments.apps \"web\" not found",
	}
	tests := []struct {
		name string
		view decisionView
		now  time.Time
		want string
	}{{
		name: "scaled up, limited by a policy, one metric failed",
		view: decisionView{Kind: kindAutoscaler, Namespace: "shop", Name: "web", Target: "Deployment/web",
			Record: scaledUpRecord(), Conditions: testConditions()},
		now: decisionTime.Add(12 * time.Second),
		want: `Autoscaler:  shop/web
Target:      Deployment/web
Replicas:    4 → 8
Outcome:     ScaledUp (scale written)
Decided:     2026-11-23T05:10:00Z (12s ago) by ebbflow-autoscaler-6c9f7d-x2k4q_0b8e4f6a-1c2d-4e5f-8a9b-0c1d2e3f4a5b
Error:       unable to get metric http_requests_per_second: no series

Metrics:
  TYPE      NAME                      VALUE  TARGET           AGE  PROPOSAL  REASON
  External  queue_messages_ready      25     AverageValue 10  3s   10        Proportional
  Resource  cpu                       45%    Utilization 80%  75s  3         Proportional
  Pods      http_requests_per_second  -      -                1s   error     unable to get metric http_requests_per_second: no series

Winning proposal:  10 from queue_messages_ready
Desired replicas:  8

Steps that changed the proposal:
  STAGE          FROM → TO  MESSAGE
  ScaleUpPolicy  10 → 8     the desired replica count is increasing faster than the maximum scale rate (policies: Pods 4 per 15s; selectPolicy Max)

Conditions:
  TYPE            STATUS  REASON            MESSAGE
  AbleToScale     True    SucceededRescale  the HPA controller was able to update the target scale to 8
  ScalingLimited  True    ScaleUpLimit      the desired replica count is increasing faster than the maximum scale rate
`,
	}, {
		name: "dry run held at max, sample newer than the decision, evaluatedBy with control characters",
		view: decisionView{Kind: kindHPA, Namespace: "shop", Name: "api", Target: "Deployment/api", Record: dryRun},
		now:  decisionTime.Add(3*time.Minute + 4*time.Second),
		want: `HorizontalPodAutoscaler:  shop/api
Target:                   Deployment/api
Replicas:                 2 → 6
Outcome:                  WouldScale (not scaled: dry run)
Decided:                  2026-11-23T05:10:00Z (3m4s ago) by host?[2J name_1

Metrics:
  TYPE    NAME                                     VALUE  TARGET    AGE  PROPOSAL  REASON
  Object  http_requests_per_second on Service/web  120    Value 20  -1s  12        Proportional

Winning proposal:  12 from http_requests_per_second on Service/web
Desired replicas:  6

Steps that changed the proposal:
  STAGE        FROM → TO  MESSAGE
  MaxReplicas  12 → 6     the desired replica count is more than the maximum replica count
  DryRun       6 → 2      dry run: the scale is not written

Conditions:
  none
`,
	}, {
		name: "failed before any metric, no evaluatedBy",
		view: decisionView{Kind: kindAutoscaler, Namespace: "shop", Name: "gone", Record: failed},
		now:  decisionTime.Add(2 * time.Hour),
		want: `Autoscaler:  shop/gone
Target:      -
Replicas:    3 → 3
Outcome:     Failed (not scaled: the evaluation failed)
Decided:     2026-11-23T05:10:00Z (120m ago)
Error:       deployments.apps "web" not found

Metrics:
  none read

Winning proposal:  none (no metric gave a usable proposal)
Desired replicas:  3

Steps that changed the proposal:
  none

Conditions:
  none
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderTable(tt.view, tt.now)
			if got != tt.want {
				t.Errorf("renderTable:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestRenderRecord: -o json and -o yaml print the record itself: they decode
// back to the same record.
func TestRenderRecord(t *testing.T) {
	want := scaledUpRecord()
	for _, format := range []string{outputJSON, outputYAML} {
		b, err := renderRecord(want, format)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		var got v1alpha1.DecisionRecord
		switch format {
		case outputJSON:
			err = json.Unmarshal(b, &got)
		case outputYAML:
			if !strings.HasPrefix(string(b), "---\n") {
				t.Errorf("yaml does not start a document: %q", b)
			}
			err = yaml.Unmarshal(b, &got)
		}
		if err != nil {
			t.Fatalf("%s: decode %s: %v", format, b, err)
		}
		if !apiequality.Semantic.DeepEqual(&got, want) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", format, got, *want)
		}
	}
	if _, err := renderRecord(want, "xml"); err == nil {
		t.Error("renderRecord(xml) succeeded")
	}
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          "plain",
		"a\nb\r\nc\td":   "a b  c d",
		"esc\x1b[31mred": "esc?[31mred",
		"c1\u009bx ünï":  "c1?x ünï",
		"":               "",
	} {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}
