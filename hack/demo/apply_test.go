package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	easv1alpha1 "github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// examples are manifests/examples decoded as the demo does, by kind and name.
type examples struct {
	deployments map[string]*appsv1.Deployment
	hpas        map[string]*autoscalingv2.HorizontalPodAutoscaler
	autoscalers map[string]*easv1alpha1.Autoscaler
	services    []string
}

func loadExamples(t *testing.T) examples {
	t.Helper()
	objs, err := loadManifests("../../manifests/examples")
	if err != nil {
		t.Fatal(err)
	}
	pinNodes(objs, []string{"n0", "n1"})
	return sortExamples(objs)
}

func sortExamples(objs []runtime.Object) examples {
	e := examples{deployments: map[string]*appsv1.Deployment{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, autoscalers: map[string]*easv1alpha1.Autoscaler{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			e.deployments[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			e.hpas[o.Name] = o
		case *easv1alpha1.Autoscaler:
			e.autoscalers[o.Name] = o
		case *corev1.Service:
			e.services = append(e.services, o.Name)
		}
	}
	return e
}

// TestLoadExampleManifests decodes manifests/examples as the demo does and
// checks what the demo relies on: one HPA per workload on the metric source
// it demonstrates, scaling the Deployment of the same name in the demo's
// namespace, and nodeName pinned by pinNodes.
func TestLoadExampleManifests(t *testing.T) {
	e := loadExamples(t)
	wantSource := map[string]autoscalingv2.MetricSourceType{
		"web":    autoscalingv2.PodsMetricSourceType,
		"api":    autoscalingv2.ObjectMetricSourceType,
		"worker": autoscalingv2.ExternalMetricSourceType,
	}
	for name, source := range wantSource {
		d, h := e.deployments[name], e.hpas[name]
		if d == nil || h == nil {
			t.Fatalf("%s: deployment %v, hpa %v; want both", name, d != nil, h != nil)
		}
		if d.Namespace != namespace || h.Namespace != namespace {
			t.Errorf("%s: namespaces %q and %q, want %q", name, d.Namespace, h.Namespace, namespace)
		}
		if d.Spec.Template.Spec.NodeName == "" {
			t.Errorf("%s: nodeName not pinned", name)
		}
		if h.Spec.ScaleTargetRef.Name != name || len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Type != source {
			t.Errorf("%s: hpa targets %q with metrics %+v, want %s", name, h.Spec.ScaleTargetRef.Name, h.Spec.Metrics, source)
		}
		if b := h.Spec.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds > 60 {
			t.Errorf("%s: want a scale-down stabilization window of at most 60s for the demo", name)
		}
	}
	if !slices.Contains(e.services, "api") {
		t.Errorf("services %v: want the api Service the Object metric describes", e.services)
	}
	if e.deployments["web"].Spec.Template.Spec.NodeName == e.deployments["api"].Spec.Template.Spec.NodeName &&
		e.deployments["api"].Spec.Template.Spec.NodeName == e.deployments["worker"].Spec.Template.Spec.NodeName {
		t.Error("pinNodes put every Deployment on one node")
	}
}

// TestWebEbbflowMatchesWeb checks that web-ebbflow is web under another
// name: the same pod spec and replicas, its own selector and Service, and an
// Autoscaler (no HPA) whose spec is web's HPA spec but for the target name.
func TestWebEbbflowMatchesWeb(t *testing.T) {
	e := loadExamples(t)
	web, eas := e.deployments["web"], e.deployments[webEbbflow]
	a, h := e.autoscalers[webEbbflow], e.hpas["web"]
	if eas == nil || a == nil || h == nil {
		t.Fatalf("deployment %v, autoscaler %v, web hpa %v; want all", eas != nil, a != nil, h != nil)
	}
	if _, ok := e.hpas[webEbbflow]; ok {
		t.Error("web-ebbflow has an HPA; want only its Autoscaler")
	}
	if a.Namespace != namespace || eas.Namespace != namespace {
		t.Errorf("namespaces %q and %q, want %q", a.Namespace, eas.Namespace, namespace)
	}
	if sel := eas.Spec.Selector.MatchLabels["app"]; sel != webEbbflow || eas.Spec.Template.Labels["app"] != webEbbflow {
		t.Errorf("selector app=%q, want app=%s (distinct from web's pods)", sel, webEbbflow)
	}
	if !slices.Contains(e.services, webEbbflow) {
		t.Errorf("services %v: want %s", e.services, webEbbflow)
	}
	wantPod, gotPod := web.Spec.Template.Spec.DeepCopy(), eas.Spec.Template.Spec.DeepCopy()
	wantPod.NodeName, gotPod.NodeName = "", ""
	if !equality.Semantic.DeepEqual(wantPod, gotPod) || *web.Spec.Replicas != *eas.Spec.Replicas {
		t.Errorf("web-ebbflow pod spec or replicas differ from web's:\n%+v\n%+v", gotPod, wantPod)
	}
	want := h.Spec.DeepCopy()
	want.ScaleTargetRef.Name = webEbbflow
	if got := easv1alpha1.ToHPASpec(&a.Spec); !equality.Semantic.DeepEqual(got, *want) {
		t.Errorf("Autoscaler spec\n%+v\nwant web's HPA spec with target %s\n%+v", got, webEbbflow, *want)
	}
}
