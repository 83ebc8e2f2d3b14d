package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	ebbflowfake "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned/fake"
	ebbflowinformers "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions"
	informersv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/generated/informers/externalversions/autoscaling/v1alpha1"
)

// autoscalerLoop runs an Autoscaler through successive evaluations, feeding
// each written status back into the informer as the API server would.
type autoscalerLoop struct {
	f        *fixture
	client   *ebbflowfake.Clientset
	informer informersv1alpha1.AutoscalerInformer
	obj      *v1alpha1.Autoscaler
}

func newAutoscalerLoop(f *fixture, a *v1alpha1.Autoscaler) *autoscalerLoop {
	client := ebbflowfake.NewSimpleClientset(a)
	informer := ebbflowinformers.NewSharedInformerFactory(client, 0).Autoscaling().V1alpha1().Autoscalers()
	if err := informer.Informer().GetIndexer().Add(a); err != nil {
		f.t.Fatal(err)
	}
	f.build(NewAutoscalerKind(informer, client.AutoscalingV1alpha1()))
	return &autoscalerLoop{f: f, client: client, informer: informer, obj: a}
}

// step evaluates once and returns the replicas written to /scale, if any.
func (l *autoscalerLoop) step() []int32 {
	l.f.t.Helper()
	l.client.ClearActions()
	if _, err := l.f.sync("Autoscaler/" + l.obj.Namespace + "/" + l.obj.Name); err != nil {
		l.f.t.Logf("sync: %v", err)
	}
	for _, act := range l.client.Actions() {
		if u, ok := act.(core.UpdateAction); ok && act.GetSubresource() == "status" {
			l.obj = u.GetObject().(*v1alpha1.Autoscaler).DeepCopy()
			if err := l.informer.Informer().GetIndexer().Update(l.obj); err != nil {
				l.f.t.Fatal(err)
			}
		}
	}
	return l.f.scaleUpdates()
}

// A queue worker scales to zero through a 50%-per-minute policy (8→4→2→1→0,
// never 8→0) once the queue has been empty for scaleToZero.after, stays at
// zero while the queue is below activation, and wakes when it passes it.
func TestScaleToZeroThroughPolicies(t *testing.T) {
	f := newFixture(t)
	f.target("worker", 8, 8)
	f.pods("worker", 8)
	f.metrics.External = map[string][]int64{"queue": {0}}
	hpa := newHPA("worker", "worker", 0, 20, externalMetric("queue", "10"))
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr[int32](0),
		Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}},
	}}
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	activation := resource.MustParse("5")
	a.Spec.Metrics[0].Activation = &activation
	a.Spec.ScaleToZero = &v1alpha1.ScaleToZeroSpec{After: &metav1.Duration{Duration: 2 * time.Minute}}
	l := newAutoscalerLoop(f, a)

	var trace []int32
	for range 6 {
		trace = append(trace, l.step()...)
		f.clock.Step(time.Minute)
	}
	if want := []int32{4, 2, 1, 0}; !slices.Equal(trace, want) {
		t.Fatalf("replica trace %v, want %v", trace, want)
	}
	rec := l.obj.Status.LastDecision
	if rec == nil || rec.DesiredReplicas != 0 {
		t.Fatalf("record %+v", rec)
	}

	// Below activation: stays at zero.
	f.metrics.External["queue"] = []int64{3000}
	if got := l.step(); len(got) != 0 {
		t.Fatalf("woke below activation: %v", got)
	}
	f.clock.Step(15 * time.Second)
	// Above activation: wakes.
	f.metrics.External["queue"] = []int64{30000}
	got := l.step()
	if len(got) != 1 || got[0] < 1 {
		t.Fatalf("did not wake above activation: %v", got)
	}
	rec = l.obj.Status.LastDecision
	found := false
	for _, s := range rec.Steps {
		found = found || s.Stage == "Activation"
	}
	if !found {
		t.Errorf("record does not say what activated: %+v", rec.Steps)
	}
}

// With Prometheus gone, the Replicas fallback goes to its replicas after
// fallback.after, through the policies, and the condition says so.
func TestFallbackReplicasAfterOutage(t *testing.T) {
	f := newFixture(t)
	f.target("worker", 2, 2)
	f.pods("worker", 2)
	f.metrics.External = map[string][]int64{"queue": {20000}}
	hpa := newHPA("worker", "worker", 1, 20, externalMetric("queue", "10"))
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	a.Spec.Fallback = &v1alpha1.FallbackSpec{Policy: v1alpha1.FallbackReplicas, Replicas: ptr[int32](5), After: &metav1.Duration{Duration: time.Minute}}
	l := newAutoscalerLoop(f, a)
	if got := l.step(); len(got) != 0 {
		t.Fatalf("healthy steady state scaled: %v", got)
	}
	f.metrics.Err = errUnavailable
	var trace []int32
	for range 5 {
		f.clock.Step(20 * time.Second)
		trace = append(trace, l.step()...)
	}
	if !slices.Equal(trace, []int32{4, 5}) {
		t.Errorf("trace %v, want [4 5] (fallback to 5 through the scale-up limit max(2×current, 4))", trace)
	}
	var fb *autoscalingv2.HorizontalPodAutoscalerCondition
	for i, c := range l.obj.Status.Conditions {
		if c.Type == "Fallback" {
			fb = &l.obj.Status.Conditions[i]
		}
	}
	if fb == nil || fb.Status != "True" {
		t.Fatalf("Fallback condition %+v", fb)
	}
	f.metrics.Err = nil
	f.clock.Step(20 * time.Second)
	l.step()
	for _, c := range l.obj.Status.Conditions {
		if c.Type == "Fallback" && c.Status != "False" {
			t.Errorf("Fallback after recovery: %+v", c)
		}
	}
}

var errUnavailable = errors.New("the server is currently unable to handle the request")
