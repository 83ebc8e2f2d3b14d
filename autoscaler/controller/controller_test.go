package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

const hpaKey = "HorizontalPodAutoscaler/ns/web"

func wantCondition(t *testing.T, st autoscalingv2.HorizontalPodAutoscalerStatus, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type != typ {
			continue
		}
		if c.Status != status || c.Reason != reason || c.Message != message {
			t.Errorf("condition %s = %s/%s/%q, want %s/%s/%q", typ, c.Status, c.Reason, c.Message, status, reason, message)
		}
		return
	}
	t.Errorf("condition %s missing in %+v", typ, st.Conditions)
}

func TestPodsMetricScalesUp(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()

	if _, err := f.sync(hpaKey); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates = %v, want [4]", got)
	}
	wantEvents := []string{"Normal SuccessfulRescale New size: 4; reason: pods metric qps above target"}
	if got := f.events(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %q, want %q", got, wantEvents)
	}
	updates := f.statusUpdates()
	if len(updates) != 1 {
		t.Fatalf("status updates = %d, want 1", len(updates))
	}
	st := updates[0].Status
	now := metav1.NewTime(start)
	want := autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr(int64(1)),
		LastScaleTime:      &now,
		CurrentReplicas:    2,
		DesiredReplicas:    4,
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: "qps"},
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewQuantity(20, resource.DecimalSI)},
		}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 4"},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from pods metric qps"},
			{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionFalse, LastTransitionTime: now, Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range"},
			{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionFalse, LastTransitionTime: now, Reason: "NotScaledToZero", Message: "the HPA controller did not scale the workload to zero"},
		},
	}
	if !apiequality.Semantic.DeepEqual(st, want) {
		t.Errorf("status =\n%+v\nwant\n%+v", st, want)
	}
}

func TestScaleUpLimitedWithoutBehavior(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 100, 100)}
	f.seedHPA(newHPA("web", "web", 1, 20, podsMetric("qps", "10")))
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	// 20 proposed; the fixed rule allows max(2×2, 4) = 4.
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates = %v, want [4]", got)
	}
	wantCondition(t, f.statusUpdates()[0].Status, autoscalingv2.ScalingLimited, corev1.ConditionTrue, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
}

// A second evaluation that reaches the same result writes nothing.
func TestNoStatusWriteWhenNothingChanged(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 11, 9)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()

	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	updates := f.statusUpdates()
	if len(updates) != 1 || len(f.scaleUpdates()) != 0 {
		t.Fatalf("first sync: %d status updates, scale updates %v; want 1 and none", len(updates), f.scaleUpdates())
	}
	wantCondition(t, updates[0].Status, autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	f.seedHPA(updates[0]) // the informer sees the write

	f.clock.Step(15 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if n := len(f.statusUpdates()); n != 0 {
		t.Errorf("second sync wrote status %d times, want 0", n)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Errorf("second sync scaled to %v", got)
	}

	// A changed value changes status.currentMetrics, so it is written.
	f.metrics.Pods["qps"] = podSamples("web", 9, 9, 9)
	f.clock.Step(15 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if n := len(f.statusUpdates()); n != 1 {
		t.Errorf("third sync wrote status %d times, want 1", n)
	}
}

// One metric missing while the other asks to scale down: no scaling, the
// first error in the condition and events.
func TestMissingMetricPreventsScaleDown(t *testing.T) {
	f := newFixture(t)
	f.target("web", 4, 4)
	f.pods("web", 4)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 1, 1, 1, 1)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10"), externalMetric("queue_depth", "5")))
	f.build()

	_, err := f.sync(hpaKey)
	const cause = "unable to get external metric ns/queue_depth/nil: no metrics returned from external metrics API"
	wantErr := "invalid metrics (1 invalid out of 2), first error is: failed to get queue_depth external metric value: failed to get queue_depth external metric: " + cause
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("sync error = %v, want it to contain %q", err, wantErr)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("scaled to %v despite a missing metric", got)
	}
	wantEvents := []string{
		"Warning FailedComputeMetricsReplicas " + wantErr,
		"Warning FailedGetExternalMetric " + cause,
	}
	if got := f.events(); !slices.Equal(got, wantEvents) {
		t.Errorf("events =\n%q\nwant\n%q", got, wantEvents)
	}
	st := f.statusUpdates()[0].Status
	wantCondition(t, st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetExternalMetric",
		"the HPA was unable to compute the replica count: "+cause)
	wantCondition(t, st, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	if st.CurrentReplicas != 4 || st.DesiredReplicas != 0 || len(st.CurrentMetrics) != 2 || st.CurrentMetrics[1].Type != "" {
		t.Errorf("status replicas %d/%d, metrics %+v; want 4/0 with an empty second entry, as upstream", st.CurrentReplicas, st.DesiredReplicas, st.CurrentMetrics)
	}

	// With the metric back, the scale-down happens.
	f.metrics.External = map[string][]int64{"queue_depth": {1000}}
	f.seedHPA(f.statusUpdates()[0])
	f.clock.Step(15 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{1}) {
		t.Errorf("scale updates = %v, want [1]", got)
	}
}

func TestAllPodsMissingMetrics(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()
	if _, err := f.sync(hpaKey); err == nil {
		t.Fatal("sync succeeded without metrics")
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("scaled to %v", got)
	}
	wantCondition(t, f.statusUpdates()[0].Status, autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetPodsMetric",
		"the HPA was unable to compute the replica count: unable to get metric qps: no metrics returned from custom metrics API")
}

func TestFailedGetScale(t *testing.T) {
	f := newFixture(t)
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()
	_, err := f.sync(hpaKey)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to query scale subresource for Deployment/ns/web: ") {
		t.Fatalf("sync error = %v", err)
	}
	msg := `deployments.apps "web" not found`
	if got, want := f.events(), []string{"Warning FailedGetScale " + msg}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	wantCondition(t, f.statusUpdates()[0].Status, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
		"the HPA controller was unable to get the target's current scale: "+msg)
}

func TestDeletionDropsState(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	f.seedHPA(hpa)
	c := f.build()
	if deleted, err := f.sync(hpaKey); err != nil || deleted {
		t.Fatalf("sync = %v, %v", deleted, err)
	}
	if h, ok := c.memory.peek(hpaKey); !ok || len(h.Recommendations) == 0 {
		t.Fatalf("no recommendation history after a sync")
	}
	if len(c.tracker.matching("ns", nil, 2)) != 0 || !c.tracker.update(hpaKey, nil) {
		t.Fatalf("selector not tracked")
	}
	if err := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete(hpa); err != nil {
		t.Fatal(err)
	}
	deleted, err := f.sync(hpaKey)
	if err != nil || !deleted {
		t.Fatalf("sync after delete = %v, %v; want deleted", deleted, err)
	}
	if _, ok := c.memory.peek(hpaKey); ok {
		t.Errorf("history kept after deletion")
	}
	if c.tracker.update(hpaKey, nil) {
		t.Errorf("selector kept after deletion")
	}
	if n := len(f.kube.Actions()) + len(f.scales.Actions()); n != 0 {
		t.Errorf("%d API calls for a deleted object", n)
	}
}

func TestAmbiguousSelector(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.seedHPA(newHPA("web2", "web", 1, 10, podsMetric("qps", "10")))
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	f.events()
	_, err := f.sync("HorizontalPodAutoscaler/ns/web2")
	msg := "pods by selector app=web are controlled by more than one HPA (e.g. [ns/web ns/web2])"
	if err == nil || !strings.Contains(err.Error(), msg) {
		t.Fatalf("sync error = %v", err)
	}
	want := []string{"Warning AmbiguousSelector " + msg, "Warning FailedComputeMetricsReplicas " + msg}
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	wantCondition(t, f.statusUpdates()[0].Status, autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg)
}

// With behavior, a rescale is recorded for the policies: a second scale-up
// within the period is limited by the first.
func TestBehaviorPoliciesUseRecordedScaleEvents(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 100, 100)}
	hpa := newHPA("web", "web", 1, 50, podsMetric("qps", "10"))
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 3, PeriodSeconds: 60}},
	}}
	f.seedHPA(hpa)
	c := f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{5}) {
		t.Fatalf("first scale updates = %v, want [5]", got)
	}
	if h, _ := c.memory.peek(hpaKey); len(h.Events.Up) != 1 || h.Events.Up[0].Change != 3 {
		t.Fatalf("scale events = %+v", h.Events)
	}
	f.targets["web"].Status.Replicas = 5
	f.clock.Step(15 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	// 3 pods per 60s are already used up within the period.
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Errorf("second scale updates = %v, want none", got)
	}
	f.clock.Step(60 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{8}) {
		t.Errorf("third scale updates = %v, want [8]", got)
	}
}

func TestScaleConflictRetries(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	conflicts := 1
	f.scales.PrependReactor("update", "deployments", func(a core.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("stale"))
		}
		return false, nil, nil
	})
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4, 4}) {
		t.Errorf("scale updates = %v, want a conflict then [4]", got)
	}
	if f.targets["web"].Spec.Replicas != 4 {
		t.Errorf("target at %d", f.targets["web"].Spec.Replicas)
	}
}

func TestQueueKeys(t *testing.T) {
	kind, ns, name, err := splitKey(queueKey("Autoscaler", "a", "b"))
	if err != nil || kind != "Autoscaler" || ns != "a" || name != "b" {
		t.Errorf("round trip = %q %q %q %v", kind, ns, name, err)
	}
	if _, _, _, err := splitKey("nope"); err == nil {
		t.Error("invalid key accepted")
	}
	if got := fmt.Sprint(objectNames([]string{"Autoscaler/ns/a", "HorizontalPodAutoscaler/ns/a"})); got != "[Autoscaler/ns/a ns/a]" {
		t.Errorf("objectNames = %s", got)
	}
}

func TestFailedRescale(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{} // scale events are recorded
	f.seedHPA(hpa)
	f.scales.PrependReactor("update", "deployments", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission denied")
	})
	c := f.build()
	_, err := f.sync(hpaKey)
	if err == nil || err.Error() != "failed to rescale Deployment/ns/web: admission denied" {
		t.Fatalf("sync error = %v", err)
	}
	want := []string{"Warning FailedRescale New size: 4; reason: pods metric qps above target; error: admission denied"}
	if got := f.events(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
	st := f.statusUpdates()[0].Status
	wantCondition(t, st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: admission denied")
	if st.DesiredReplicas != 0 || st.LastScaleTime != nil || st.CurrentReplicas != 2 {
		t.Errorf("status = %+v; want the previous desired count and no scale time", st)
	}
	if h, _ := c.memory.peek(hpaKey); len(h.Events.Up)+len(h.Events.Down) != 0 {
		t.Errorf("a failed rescale was recorded: %+v", h.Events)
	}
}
