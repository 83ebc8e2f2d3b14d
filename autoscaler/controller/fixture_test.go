package controller

import (
	"context"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	metricsfake "github.com/ebbflow/ebbflow/autoscaler/metrics/fake"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

var start = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

// fixture is a controller over fake clients with seeded informer indexers,
// in the style of sample-controller's tests: nothing runs in the background;
// tests call sync and inspect the recorded actions and events.
type fixture struct {
	t        testing.TB
	kube     *kubefake.Clientset
	scales   *scalefake.FakeScaleClient
	targets  map[string]*autoscalingv1.Scale // by deployment name
	metrics  *metricsfake.Client
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	factory  informers.SharedInformerFactory
	ctrl     *Controller
	cfg      Config
	// deps, when set, changes the dependencies before the controller is built.
	deps func(*Deps)
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{
		t:        t,
		kube:     kubefake.NewClientset(),
		scales:   &scalefake.FakeScaleClient{},
		targets:  map[string]*autoscalingv1.Scale{},
		metrics:  &metricsfake.Client{Timestamp: start},
		recorder: record.NewFakeRecorder(100),
		clock:    clocktesting.NewFakeClock(start),
		cfg: Config{
			SyncPeriod:              15 * time.Second,
			Tolerance:               0.1,
			DownscaleStabilization:  0,
			CPUInitializationPeriod: 5 * time.Minute,
			InitialReadinessDelay:   30 * time.Second,
			Workers:                 1,
		},
	}
	f.factory = informers.NewSharedInformerFactory(f.kube, 0)
	f.scales.AddReactor("get", "deployments", f.getScale)
	f.scales.AddReactor("update", "deployments", f.updateScale)
	return f
}

func (f *fixture) getScale(a core.Action) (bool, runtime.Object, error) {
	name := a.(core.GetAction).GetName()
	s, ok := f.targets[name]
	if !ok {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
	}
	return true, s.DeepCopy(), nil
}

func (f *fixture) updateScale(a core.Action) (bool, runtime.Object, error) {
	s := a.(core.UpdateAction).GetObject().(*autoscalingv1.Scale).DeepCopy()
	f.targets[s.Name].Spec.Replicas = s.Spec.Replicas
	return true, s, nil
}

// build creates the controller; call after seeding.
func (f *fixture) build(kinds ...Kind) *Controller {
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{appsv1.SchemeGroupVersion})
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), apimeta.RESTScopeNamespace)
	pods := f.factory.Core().V1().Pods()
	if len(kinds) == 0 {
		kinds = []Kind{f.hpaKind()}
	}
	deps := Deps{
		Scales: f.scales, Mapper: mapper, Metrics: f.metrics,
		Pods:     pods.Informer(),
		Recorder: f.recorder, Clock: f.clock,
	}
	if f.deps != nil {
		f.deps(&deps)
	}
	c, err := New(f.cfg, deps, kinds...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.ctrl = c
	return c
}

func (f *fixture) hpaKind() *HPAKind {
	return NewHPAKind(f.factory.Autoscaling().V2().HorizontalPodAutoscalers(), f.kube.AutoscalingV2())
}

// target adds a Deployment's scale with spec and status replicas.
func (f *fixture) target(name string, spec, status int32) {
	f.targets[name] = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: spec},
		Status:     autoscalingv1.ScaleStatus{Replicas: status, Selector: "app=" + name},
	}
}

// pods adds n running, ready pods labelled app=name, named name-0...
func (f *fixture) pods(name string, n int) {
	for i := range n {
		started := metav1.NewTime(start.Add(-time.Hour))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName(name, i), Namespace: "ns", Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}},
		}
		if err := f.factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			f.t.Fatal(err)
		}
	}
}

func podName(name string, i int) string { return name + "-" + string(rune('a'+i)) }

// podSamples returns the same value (in whole units) for pods name-a...
func podSamples(name string, values ...int64) replicas.Samples {
	s := replicas.Samples{}
	for i, v := range values {
		s[podName(name, i)] = replicas.Sample{Value: v * 1000, Timestamp: start, Window: time.Minute}
	}
	return s
}

// seedHPA puts hpa in the informer's indexer and the fake API.
func (f *fixture) seedHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if err := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Update(hpa); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.kube.Tracker().Get(autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), hpa.Namespace, hpa.Name); err != nil {
		if err := f.kube.Tracker().Add(hpa); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) sync(key string) (bool, error) {
	f.kube.ClearActions()
	f.scales.ClearActions()
	return f.ctrl.sync(context.Background(), key)
}

// statusUpdates returns the HPAs written through the status subresource.
func (f *fixture) statusUpdates() []*autoscalingv2.HorizontalPodAutoscaler {
	var out []*autoscalingv2.HorizontalPodAutoscaler
	for _, a := range f.kube.Actions() {
		if u, ok := a.(core.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*autoscalingv2.HorizontalPodAutoscaler))
		}
	}
	return out
}

// scaleUpdates returns the replica counts written to /scale.
func (f *fixture) scaleUpdates() []int32 {
	var out []int32
	for _, a := range f.scales.Actions() {
		if u, ok := a.(core.UpdateAction); ok && a.GetVerb() == "update" {
			out = append(out, u.GetObject().(*autoscalingv1.Scale).Spec.Replicas)
		}
	}
	return out
}

// events drains the recorded events, sorted.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			sort.Strings(out)
			return out
		}
	}
}

func ptr[T any](v T) *T { return &v }

func podsMetric(name, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
	}}
}

func externalMetric(name, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
	}}
}

func newHPA(name, target string, minR, maxR int32, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			MinReplicas:    &minR,
			MaxReplicas:    maxR,
			Metrics:        metrics,
		},
	}
}
