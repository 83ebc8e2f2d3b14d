package controller

import (
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// tickingClock moves a fake clock on by a millisecond at every reading.
type tickingClock struct {
	*clocktesting.FakeClock
}

func (c tickingClock) Now() time.Time {
	c.Step(time.Millisecond)
	return c.FakeClock.Now()
}

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}}}
}

func externalValue(name, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q},
	}}
}

func TestResourceUtilizationStatus(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2) // 100m cpu requested each
	f.metrics.Resources = map[corev1.ResourceName]replicas.Samples{corev1.ResourceCPU: {
		"web-a": {Value: 150, Timestamp: start, Window: time.Minute},
		"web-b": {Value: 150, Timestamp: start, Window: time.Minute},
	}}
	f.seedHPA(newHPA("web", "web", 1, 10, cpuUtilization(50)))
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	// 150% of request against 50%: 6 replicas, limited to max(2×2, 4).
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("scale updates = %v, want [4]", got)
	}
	st := f.statusUpdates()[0].Status
	want := []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name:    corev1.ResourceCPU,
		Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(150)), AverageValue: resource.NewMilliQuantity(150, resource.DecimalSI)},
	}}}
	if !apiequality.Semantic.DeepEqual(st.CurrentMetrics, want) {
		t.Errorf("currentMetrics = %+v, want %+v", st.CurrentMetrics, want)
	}
	wantCondition(t, st, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
		"the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)")
	if got := f.events(); len(got) != 1 || got[0] != "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target" {
		t.Errorf("events = %q", got)
	}
}

// minReplicas 0 with an External metric: the controller scales to zero,
// says so in ScaledToZero, and wakes the workload when the metric rises.
func TestScaleToZeroAndBack(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.External = map[string][]int64{"queue": {0}}
	f.seedHPA(newHPA("web", "web", 0, 10, externalValue("queue", "10")))
	f.build()
	// Time passes between the readings of one reconcile, as on a real clock
	// (with a zero window the first recommendation must not count).
	f.ctrl.deps.Clock = tickingClock{f.clock}
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{0}) {
		t.Fatalf("scale updates = %v, want [0]", got)
	}
	written := f.statusUpdates()[0]
	wantCondition(t, written.Status, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero")
	if v := written.Status.CurrentMetrics[0].External.Current.Value; v == nil || v.MilliValue() != 0 {
		t.Errorf("external value = %v", v)
	}
	f.seedHPA(written)
	f.targets["web"].Status.Replicas = 0

	f.metrics.External["queue"] = []int64{25000}
	f.clock.Step(15 * time.Second)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{3}) {
		t.Fatalf("scale updates = %v, want [3]", got)
	}
	wantCondition(t, f.statusUpdates()[0].Status, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
}

func TestManualScaleToZeroDisablesScaling(t *testing.T) {
	f := newFixture(t)
	f.target("web", 0, 0)
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); len(got) != 0 {
		t.Fatalf("scaled to %v", got)
	}
	if f.metrics.Calls() != 0 {
		t.Errorf("metrics read %d times while scaling is disabled", f.metrics.Calls())
	}
	st := f.statusUpdates()[0].Status
	wantCondition(t, st, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
	if st.DesiredReplicas != 0 || st.CurrentReplicas != 0 || st.CurrentMetrics != nil {
		t.Errorf("status = %+v", st)
	}
}

func TestAboveMaxClampsWithoutMetrics(t *testing.T) {
	f := newFixture(t)
	f.target("web", 12, 12)
	f.seedHPA(newHPA("web", "web", 1, 10, podsMetric("qps", "10")))
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{10}) {
		t.Fatalf("scale updates = %v, want [10]", got)
	}
	if got := f.events(); len(got) != 1 || got[0] != "Normal SuccessfulRescale New size: 10; reason: Current number of replicas above Spec.MaxReplicas" {
		t.Errorf("events = %q", got)
	}
	if f.metrics.Calls() != 0 {
		t.Errorf("metrics read %d times", f.metrics.Calls())
	}
}
