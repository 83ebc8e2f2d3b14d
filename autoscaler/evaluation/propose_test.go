package evaluation

import (
	"errors"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptrTime(t time.Time) *time.Time { return &t }

func cpuList(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func cpuUtilization(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent}}}
}

func specs() map[MetricKind]autoscalingv2.MetricSpec {
	deploy := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "a"}}
	return map[MetricKind]autoscalingv2.MetricSpec{
		ResourceUtilization: cpuUtilization(50),
		ResourceAverageValue: {Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty("1Gi")}}},
		ContainerResourceUtilization: {Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(int32(60))}}},
		ContainerResourceAverage: {Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty("100m")}}},
		PodsAverageValue: {Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty("10")}}},
		ObjectValue: {Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: deploy,
			Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: qty("10")}}},
		ObjectAverageValue: {Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{DescribedObject: deploy,
			Metric: autoscalingv2.MetricIdentifier{Name: "hits"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty("10")}}},
		ExternalValue: {Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "depth", Selector: sel}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: qty("10")}}},
		ExternalAverageValue: {Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "depth"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: qty("10")}}},
	}
}

func TestClassifyAndDescribe(t *testing.T) {
	want := map[MetricKind]string{
		ResourceUtilization:          "cpu resource utilization (percentage of request)",
		ResourceAverageValue:         "memory resource",
		ContainerResourceUtilization: "cpu container resource utilization (percentage of request)",
		ContainerResourceAverage:     "cpu resource",
		PodsAverageValue:             "pods metric qps",
		ObjectValue:                  "Deployment metric hits",
		ObjectAverageValue:           "external metric hits(nil)",
		ExternalValue:                "external metric depth(&LabelSelector{MatchLabels:map[string]string{queue: a,},MatchExpressions:[]LabelSelectorRequirement{},})",
		ExternalAverageValue:         "external metric depth(nil)",
	}
	for kind, spec := range specs() {
		t.Run(string(kind), func(t *testing.T) {
			got, err := Classify(spec)
			if err != nil || got != kind {
				t.Fatalf("Classify = %s, %v; want %s", got, err, kind)
			}
			if d := metricDescription(spec); d != want[kind] {
				t.Errorf("description = %q, want %q", d, want[kind])
			}
		})
	}
}

func TestClassifyInvalid(t *testing.T) {
	cases := map[string]autoscalingv2.MetricSpec{
		"invalid resource metric source: neither an average utilization target nor an average value (usage) target was set": {
			Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}},
		"invalid object metric source: neither a value target nor an average value target was set": {
			Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType}}},
		"invalid external metric source: neither a value target nor an average value target was set": {
			Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{}},
		`unknown metric source type "CheddarCheese"`:                  {Type: "CheddarCheese"},
		"invalid pods metric source: no average value target was set": {Type: autoscalingv2.PodsMetricSourceType},
	}
	for want, spec := range cases {
		if _, err := Classify(spec); err == nil || err.Error() != want {
			t.Errorf("Classify(%s) error = %v, want %q", spec.Type, err, want)
		}
		if metricDescription(spec) != "" {
			t.Errorf("an invalid spec must have no description")
		}
	}
}

func TestFailure(t *testing.T) {
	cause := errors.New("boom")
	s := specs()
	cases := []struct {
		kind      MetricKind
		reason    string
		err, cond string
	}{
		{ResourceUtilization, "FailedGetResourceMetric", "failed to get cpu resource metric value: failed to get cpu utilization: boom", "failed to get cpu utilization: boom"},
		{ResourceAverageValue, "FailedGetResourceMetric", "failed to get memory resource metric value: failed to get memory usage: boom", "failed to get memory usage: boom"},
		{ContainerResourceUtilization, "FailedGetContainerResourceMetric", "failed to get app container metric value: failed to get cpu utilization: boom", "failed to get cpu utilization: boom"},
		{PodsAverageValue, "FailedGetPodsMetric", "failed to get pods metric value: boom", "boom"},
		{ObjectValue, "FailedGetObjectMetric", "failed to get object metric value: boom", "boom"},
		{ObjectAverageValue, "FailedGetObjectMetric", "failed to get object metric value: failed to get hits object metric: boom", "boom"},
		{ExternalValue, "FailedGetExternalMetric", "failed to get depth external metric value: failed to get external metric depth: boom", "boom"},
		{ExternalAverageValue, "FailedGetExternalMetric", "failed to get depth external metric value: failed to get depth external metric: boom", "boom"},
	}
	for _, tc := range cases {
		t.Run(string(tc.kind), func(t *testing.T) {
			p := failure(s[tc.kind], cause)
			if p.Err == nil || p.Err.Error() != tc.err || !errors.Is(p.Err, cause) {
				t.Errorf("err = %v, want %q wrapping the cause", p.Err, tc.err)
			}
			wantMsg := "the HPA was unable to compute the replica count: " + tc.cond
			if p.Condition.Reason != tc.reason || p.Condition.Message != wantMsg ||
				p.Condition.Type != autoscalingv2.ScalingActive || p.Condition.Status != corev1.ConditionFalse {
				t.Errorf("condition = %+v, want %s %q", p.Condition, tc.reason, wantMsg)
			}
		})
	}
	unknown := autoscalingv2.MetricSpec{Type: "CheddarCheese"}
	_, err := Classify(unknown)
	if p := failure(unknown, err); p.Condition.Reason != "InvalidMetricSourceType" || p.Err.Error() != `unknown metric source type "CheddarCheese"` {
		t.Errorf("unknown type: %+v", p)
	}
}

func TestFetchError(t *testing.T) {
	cause := errors.New("no metrics returned from resource metrics API")
	s := specs()
	cases := map[MetricKind]string{
		ResourceUtilization: "unable to get metrics for resource cpu: no metrics returned from resource metrics API",
		PodsAverageValue:    "unable to get metric qps: no metrics returned from resource metrics API",
		ObjectValue:         "unable to get metric hits on Deployment ns/web: no metrics returned from resource metrics API",
		ExternalValue:       "unable to get external metric ns/depth/&LabelSelector{MatchLabels:map[string]string{queue: a,},MatchExpressions:[]LabelSelectorRequirement{},}: no metrics returned from resource metrics API",
	}
	for kind, want := range cases {
		if got := fetchError(s[kind], "ns", cause); got.Error() != want || !errors.Is(got, cause) {
			t.Errorf("%s: got %v, want %q", kind, got, want)
		}
	}
	if !hasObjectOrExternal([]autoscalingv2.MetricSpec{s[PodsAverageValue], s[ExternalValue]}) || hasObjectOrExternal([]autoscalingv2.MetricSpec{s[PodsAverageValue]}) {
		t.Errorf("HasObjectOrExternal is wrong")
	}
}
