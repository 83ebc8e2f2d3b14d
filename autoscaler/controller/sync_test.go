package controller

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	metricsfake "github.com/ebbflow/ebbflow/autoscaler/metrics/fake"
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

// twoPodsPerMinute lets the scale-up add 2 pods per 60 s.
func twoPodsPerMinute() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr[int32](0),
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}},
	}}
}

// annotationPatches returns the annotations each merge patch of the HPA sets
// (nil: removed), in order.
func annotationPatches(t *testing.T, f *fixture) []map[string]*string {
	t.Helper()
	var out []map[string]*string
	for _, a := range f.kube.Actions() {
		p, ok := a.(core.PatchAction)
		if !ok {
			continue
		}
		var m struct {
			Metadata struct {
				Annotations map[string]*string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Metadata.Annotations)
	}
	return out
}

// scaleEventsPatch returns the annotation value of the last patch of the HPA.
func scaleEventsPatch(t *testing.T, f *fixture) (string, bool) {
	t.Helper()
	value, found := "", false
	for _, annotations := range annotationPatches(t, f) {
		if v, ok := annotations[v1alpha1.ScaleEventsAnnotation]; ok && v != nil {
			value, found = *v, true
		}
	}
	return value, found
}

// patchedAnnotations returns, for each patch of the HPA, the annotation keys it
// sets, sorted.
func patchedAnnotations(t *testing.T, f *fixture) [][]string {
	t.Helper()
	var out [][]string
	for _, annotations := range annotationPatches(t, f) {
		out = append(out, slices.Sorted(maps.Keys(annotations)))
	}
	return out
}

// A replica that takes over right after a rescale reads the stored scale
// event and keeps the policy's limit (2 pods per minute): no second step
// within the period. Without the stored event it would add 2 more pods.
func TestScaleEventsSurviveTakeover(t *testing.T) {
	hpa := newHPA("web", "web", 1, 20, podsMetric("qps", "10"))
	hpa.Spec.Behavior = twoPodsPerMinute()

	first := newFixture(t)
	first.target("web", 2, 2)
	first.pods("web", 2)
	first.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 40, 40)}
	first.seedHPA(hpa.DeepCopy())
	first.build()
	if _, err := first.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := first.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("first leader wrote %v, want [4] (2 pods per minute)", got)
	}
	stored, ok := scaleEventsPatch(t, first)
	if !ok {
		t.Fatal("the rescale was not stored")
	}
	if patches := patchedAnnotations(t, first); len(patches) != 1 || !slices.Equal(patches[0], []string{v1alpha1.LastDecisionAnnotation, v1alpha1.ScaleEventsAnnotation}) {
		t.Errorf("patches of the annotations = %v, want one patch of the decision record and the scale events", patches)
	}

	for _, tc := range []struct {
		name   string
		stored string
		want   []int32
	}{
		{"with the stored event", stored, nil},
		{"without it (upstream's in-memory history)", "", []int32{6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := newFixture(t)
			next.clock.SetTime(start.Add(10 * time.Second))
			next.target("web", 4, 4)
			next.pods("web", 4)
			next.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 40, 40, 40, 40)}
			h := hpa.DeepCopy()
			if tc.stored != "" {
				h.Annotations = map[string]string{v1alpha1.ScaleEventsAnnotation: tc.stored}
			}
			next.seedHPA(h)
			next.build()
			if _, err := next.sync(hpaKey); err != nil {
				t.Fatal(err)
			}
			if got := next.scaleUpdates(); !slices.Equal(got, tc.want) {
				t.Fatalf("new leader wrote %v, want %v", got, tc.want)
			}
		})
	}
}

// An invalid stored value is reported and ignored.
func TestInvalidScaleEventsIgnored(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.pods("web", 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 40, 40)}
	h := newHPA("web", "web", 1, 20, podsMetric("qps", "10"))
	h.Spec.Behavior = twoPodsPerMinute()
	h.Annotations = map[string]string{v1alpha1.ScaleEventsAnnotation: `{"up":[[-1,0]]}`}
	f.seedHPA(h)
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatal(err)
	}
	if got := f.scaleUpdates(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("wrote %v, want [4]", got)
	}
	want := "Warning InvalidScaleEvents annotation " + v1alpha1.ScaleEventsAnnotation + " ignored: up: a change must be a positive replica count"
	if !slices.Contains(f.events(), want) {
		t.Errorf("no event %q", want)
	}
}

func TestWriteTracker(t *testing.T) {
	cases := []struct {
		name    string
		written []string
		cached  string
		stale   bool
	}{
		{"no write", nil, "5", false},
		{"cache older", []string{"10"}, "9", true},
		{"cache equal", []string{"10"}, "10", false},
		{"cache newer", []string{"10"}, "11", false},
		{"latest write counts", []string{"10", "12"}, "11", true},
		{"older write ignored", []string{"12", "10"}, "11", true},
		{"incomparable never blocks", []string{"abc"}, "9", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriteTracker()
			for _, rv := range tc.written {
				w.wrote("k", rv)
			}
			if err := w.ensureSeen("k", tc.cached); (err != nil) != tc.stale {
				t.Errorf("ensureSeen = %v, want stale=%v", err, tc.stale)
			}
		})
	}
}

// A reconcile waits until the cache holds its own last status write.
func TestSyncWaitsForOwnWrite(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	hpa.ResourceVersion = "9"
	f.seedHPA(hpa)
	f.kube.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
		out := a.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler).DeepCopy()
		out.ResourceVersion = "10"
		return true, out, nil
	})
	f.build()
	if _, err := f.sync(hpaKey); err != nil || len(f.statusUpdates()) != 1 {
		t.Fatalf("first sync: %v, %d status writes", err, len(f.statusUpdates()))
	}
	if _, err := f.sync(hpaKey); err == nil {
		t.Fatal("second sync ran from a cache older than its write")
	}
	if n := len(f.kube.Actions()) + len(f.scales.Actions()) + len(f.statusUpdates()); n != 0 {
		t.Errorf("%d API calls from a stale cache", n)
	}
	written := hpa.DeepCopy()
	written.ResourceVersion = "10"
	f.seedHPA(written)
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatalf("sync after the cache caught up: %v", err)
	}
}

// steppingMetrics is a metrics client whose reads take a second of the
// fake clock and answer with a sample taken at the end of the read.
type steppingMetrics struct {
	*metricsfake.Client
	clock *clocktesting.FakeClock
}

func (m steppingMetrics) PodMetric(ctx context.Context, ns, metric string, pods, sel labels.Selector) (replicas.Samples, time.Time, error) {
	m.clock.Step(time.Second)
	s, _, err := m.Client.PodMetric(ctx, ns, metric, pods, sel)
	return s, m.clock.Now(), err
}

// The decision's time is when its observation completed: a sample read
// during the observation is never newer than the decision (explain showed
// a sample age of -1s when the decision took the time it started).
func TestDecisionTimeAfterObservation(t *testing.T) {
	f := newFixture(t)
	webHPA(f, nil)
	f.deps = func(d *Deps) { d.Metrics = steppingMetrics{Client: f.metrics, clock: f.clock} }
	f.build()
	if _, err := f.sync(hpaKey); err != nil {
		t.Fatalf("sync: %v", err)
	}
	recs := f.decisionPatches()
	if len(recs) != 1 || len(recs[0].Metrics) != 1 || recs[0].Metrics[0].Timestamp == nil {
		t.Fatalf("records = %+v, want one with one metric and its timestamp", recs)
	}
	rec := recs[0]
	sample := rec.Metrics[0].Timestamp.Time
	if !sample.Equal(start.Add(time.Second)) {
		t.Fatalf("sample timestamp = %v, want %v (read a second after the start)", sample, start.Add(time.Second))
	}
	if age := rec.Time.Sub(sample); age < 0 {
		t.Errorf("decision at %v, sample at %v: age %v, want >= 0", rec.Time.Time, sample, age)
	}
	st := f.statusUpdates()
	if len(st) != 1 || st[0].Status.LastScaleTime == nil || st[0].Status.LastScaleTime.Before(&metav1.Time{Time: sample}) {
		t.Errorf("status updates %+v: want one whose last scale time is not before the sample", st)
	}
}
