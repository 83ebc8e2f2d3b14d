package controller

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

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
