package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// The "Evaluated" line gives the winning metric's value, target and proposal
// beside the outcome, so that a log alone explains a recommendation.
func TestLogEvaluatedGivesTheWinningReading(t *testing.T) {
	spec := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: resource.NewQuantity(10, resource.DecimalSI)},
	}}
	now := time.Unix(1_700_000_000, 0)
	minR := int32(1)
	res := evaluation.Evaluate(evaluation.Input{
		Spec:     evaluation.Spec{HPA: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minR, MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{spec}}},
		Settings: evaluation.DefaultSettings(), Namespace: "ns", Target: "Deployment/ns/web",
		Scale:    evaluation.Scale{SpecReplicas: 1, StatusReplicas: 1},
		Pods:     []replicas.Pod{{Name: "web-a", Phase: corev1.PodRunning, Ready: &replicas.ReadyCondition{Status: corev1.ConditionTrue}}},
		Readings: []evaluation.Reading{{Spec: spec, Values: []int64{35_000}, Timestamp: now}},
		Now:      now, Memory: &evaluation.Memory{},
	}, func(int32, string) (time.Time, error) { return now, nil })
	if res.Err != nil || res.Decision.Err != nil {
		t.Fatalf("evaluation failed: %v, %v", res.Err, res.Decision.Err)
	}

	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 2})
	logEvaluated(logger, &res, "Deployment/web")
	if len(lines) != 1 {
		t.Fatalf("logged %d lines, want 1: %q", len(lines), lines)
	}
	for _, want := range []string{`"msg"="Evaluated"`, `"winningMetric"="queue"`, `"winningValue"="35"`, `"winningTarget"="10"`,
		`"winningTargetType"="Value"`, `"proposal"=4`, `"desiredReplicas"=4`, `"scaleTarget"="Deployment/web"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
}
