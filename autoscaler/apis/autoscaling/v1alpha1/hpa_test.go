package v1alpha1_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
)

func ptr[T any](v T) *T { return &v }

// fullSpec sets every field of an HPA spec, every metric source type and
// both behavior directions.
func fullSpec() autoscalingv2.HorizontalPodAutoscalerSpec {
	q := resource.MustParse
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "orders"}}
	return autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    ptr[int32](0),
		MaxReplicas:    20,
		Metrics: []autoscalingv2.MetricSpec{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr[int32](80)}}},
			{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
				Name: corev1.ResourceMemory, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q("512Mi"))}}},
			{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "http_requests_per_second"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q("100"))}}},
			{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
				Metric:          autoscalingv2.MetricIdentifier{Name: "requests_per_second"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr(q("2k"))}}},
			{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: sel}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(q("30"))}}},
		},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr[int32](0),
				SelectPolicy:               ptr(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{
					{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
					{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
				},
				Tolerance: ptr(q("0.01")),
			},
			ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr[int32](300),
				SelectPolicy:               ptr(autoscalingv2.DisabledPolicySelect),
				Tolerance:                  ptr(q("0.05")),
			},
		},
	}
}

func fullStatus() autoscalingv2.HorizontalPodAutoscalerStatus {
	now := metav1.NewTime(time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC))
	return autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr[int64](7),
		LastScaleTime:      &now,
		CurrentReplicas:    3,
		DesiredReplicas:    5,
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr[int32](91), AverageValue: ptr(resource.MustParse("455m"))}}},
			{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"}, Current: autoscalingv2.MetricValueStatus{Value: ptr(resource.MustParse("120"))}}},
		},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "SucceededRescale", Message: "the HPA controller was able to update the target scale to 5"},
			{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"},
			{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionFalse, LastTransitionTime: now, Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range"},
		},
	}
}

// TestFieldParity fails when k8s.io/api adds, renames or retypes a field of
// the HPA spec or status that ours lack: the conversions copy field by field
// and would silently drop it. Ours may have more fields (the extensions).
func TestFieldParity(t *testing.T) {
	tests := []struct {
		name      string
		ours, hpa reflect.Type
	}{
		{"spec", reflect.TypeFor[v1alpha1.AutoscalerSpec](), reflect.TypeFor[autoscalingv2.HorizontalPodAutoscalerSpec]()},
		{"status", reflect.TypeFor[v1alpha1.AutoscalerStatus](), reflect.TypeFor[autoscalingv2.HorizontalPodAutoscalerStatus]()},
	}
	jsonName := func(f reflect.StructField) string { return strings.Split(f.Tag.Get("json"), ",")[0] }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.hpa.NumField() {
				want := tc.hpa.Field(i)
				got, ok := tc.ours.FieldByName(want.Name)
				if !ok {
					t.Errorf("%v lacks field %s", tc.ours, want.Name)
					continue
				}
				if !sameOrExtends(got.Type, want.Type) || jsonName(got) != jsonName(want) {
					t.Errorf("field %s: ours is %v %q, HPA's is %v %q", want.Name, got.Type, jsonName(got), want.Type, jsonName(want))
				}
			}
		})
	}
}

// sameOrExtends reports whether ours is theirs, or a slice of structs that
// embed theirs' elements inline (MetricSpec extends the HPA's MetricSpec).
func sameOrExtends(ours, theirs reflect.Type) bool {
	if ours == theirs {
		return true
	}
	if ours.Kind() != reflect.Slice || theirs.Kind() != reflect.Slice || ours.Elem().Kind() != reflect.Struct {
		return false
	}
	for i := range ours.Elem().NumField() {
		f := ours.Elem().Field(i)
		if f.Anonymous && f.Type == theirs.Elem() && f.Tag.Get("json") == ",inline" {
			return true
		}
	}
	return false
}

func TestSpecConversion(t *testing.T) {
	tests := []struct {
		name string
		hpa  autoscalingv2.HorizontalPodAutoscalerSpec
	}{
		{"zero", autoscalingv2.HorizontalPodAutoscalerSpec{}},
		{"minimal", autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "StatefulSet", Name: "db"}, MaxReplicas: 3}},
		{"every field", fullSpec()},
		{"empty behavior and metrics", autoscalingv2.HorizontalPodAutoscalerSpec{
			MaxReplicas: 1, Metrics: []autoscalingv2.MetricSpec{}, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ours := v1alpha1test.FromHPASpec(&tc.hpa)
			// Same JSON: an HPA spec pasted into an Autoscaler means the same.
			if got, want := mustJSON(t, ours), mustJSON(t, tc.hpa); got != want {
				t.Errorf("FromHPASpec JSON:\n got %s\nwant %s", got, want)
			}
			a := &v1alpha1.Autoscaler{Spec: ours}
			if back := v1alpha1.ToHPASpec(&a.Spec); !apiequality.Semantic.DeepEqual(back, tc.hpa) {
				t.Errorf("ToHPASpec(&Autoscaler{Spec: FromHPASpec(x)}.Spec) != x:\n got %+v\nwant %+v", back, tc.hpa)
			}
			if back := v1alpha1.ToHPASpec(&ours); !reflect.DeepEqual(back, tc.hpa) {
				t.Errorf("ToHPASpec(FromHPASpec(x)) not deeply equal to x")
			}
		})
	}
}

func TestStatusConversion(t *testing.T) {
	tests := []struct {
		name string
		hpa  autoscalingv2.HorizontalPodAutoscalerStatus
	}{
		{"zero", autoscalingv2.HorizontalPodAutoscalerStatus{}},
		{"replicas only", autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 4}},
		{"every field", fullStatus()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ours := v1alpha1.FromHPAStatus(&tc.hpa)
			back := v1alpha1.ToHPAStatus(&ours)
			if !reflect.DeepEqual(back, tc.hpa) {
				t.Errorf("ToHPAStatus(FromHPAStatus(x)) != x:\n got %+v\nwant %+v", back, tc.hpa)
			}
			// JSON equal but for currentMetrics, which the HPA writes as
			// null when empty and the Autoscaler omits.
			var got, want map[string]any
			mustUnmarshal(t, mustJSON(t, ours), &got)
			mustUnmarshal(t, mustJSON(t, tc.hpa), &want)
			if want["currentMetrics"] == nil {
				delete(want, "currentMetrics")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("FromHPAStatus JSON:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestConversionsCopy checks the no-aliasing contract: mutating a result
// leaves the argument untouched.
func TestConversionsCopy(t *testing.T) {
	tests := []struct {
		name   string
		mutate func() (changedInput bool)
	}{
		{"FromHPASpec", func() bool {
			in := fullSpec()
			out := v1alpha1test.FromHPASpec(&in)
			*out.MinReplicas = 9
			out.Metrics[0].Resource.Target.AverageUtilization = ptr[int32](1)
			out.Behavior.ScaleUp.Policies[0].Value = 1
			return !apiequality.Semantic.DeepEqual(in, fullSpec())
		}},
		{"ToHPASpec", func() bool {
			a := &v1alpha1.Autoscaler{Spec: v1alpha1test.FromHPASpec(ptr(fullSpec()))}
			out := v1alpha1.ToHPASpec(&a.Spec)
			*out.MinReplicas = 9
			out.Metrics[2].Pods.Metric.Name = "other"
			*out.Behavior.ScaleDown.StabilizationWindowSeconds = 1
			return !apiequality.Semantic.DeepEqual(v1alpha1.ToHPASpec(&a.Spec), fullSpec())
		}},
		{"FromHPAStatus", func() bool {
			in := fullStatus()
			out := v1alpha1.FromHPAStatus(&in)
			*out.ObservedGeneration = 1
			out.Conditions[0].Reason = "changed"
			out.CurrentMetrics[1].External.Metric.Name = "changed"
			return !apiequality.Semantic.DeepEqual(in, fullStatus())
		}},
		{"ToHPAStatus", func() bool {
			in := v1alpha1.FromHPAStatus(ptr(fullStatus()))
			out := v1alpha1.ToHPAStatus(&in)
			out.LastScaleTime.Time = time.Time{}
			out.Conditions[2].Status = corev1.ConditionTrue
			return !apiequality.Semantic.DeepEqual(v1alpha1.ToHPAStatus(&in), fullStatus())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mutate() {
				t.Errorf("mutating the result of %s changed its argument", tc.name)
			}
		})
	}
}

// TestPasteHPA decodes a real HPA manifest's spec strictly into an
// Autoscaler: every HPA field must be known to the Autoscaler.
func TestPasteHPA(t *testing.T) {
	const hpaYAML = `
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Pods
    pods:
      metric: {name: http_requests_per_second}
      target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
      tolerance: "0.05"
      policies: [{type: Percent, value: 50, periodSeconds: 30}]
`
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := yaml.UnmarshalStrict([]byte(hpaYAML), &hpa); err != nil {
		t.Fatal(err)
	}
	pasted := strings.Replace(strings.Replace(hpaYAML, "autoscaling/v2", v1alpha1.SchemeGroupVersion.String(), 1),
		"HorizontalPodAutoscaler", "Autoscaler", 1)
	var a v1alpha1.Autoscaler
	if err := yaml.UnmarshalStrict([]byte(pasted), &a); err != nil {
		t.Fatalf("pasted HPA does not decode strictly as an Autoscaler: %v", err)
	}
	if got := v1alpha1.ToHPASpec(&a.Spec); !apiequality.Semantic.DeepEqual(got, hpa.Spec) {
		t.Errorf("pasted spec differs:\n got %+v\nwant %+v", got, hpa.Spec)
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		obj  runtime.Object
	}{{"Autoscaler", &v1alpha1.Autoscaler{}}, {"AutoscalerList", &v1alpha1.AutoscalerList{}}} {
		gvks, _, err := s.ObjectKinds(tc.obj)
		if err != nil || len(gvks) != 1 || gvks[0] != v1alpha1.SchemeGroupVersion.WithKind(tc.kind) {
			t.Errorf("%s: kinds %v, err %v", tc.kind, gvks, err)
		}
	}
	if got := v1alpha1.Resource("autoscalers").String(); got != "autoscalers.autoscaling.ebbflow.dev" {
		t.Errorf("Resource: %s", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}
