package main

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// TestLoadExampleManifests decodes manifests/examples as the demo does and
// checks what the demo relies on: one HPA per workload on the metric source
// it demonstrates, scaling the Deployment of the same name in the demo's
// namespace, and nodeName pinned by pinNodes.
func TestLoadExampleManifests(t *testing.T) {
	objs, err := loadManifests("../../manifests/examples")
	if err != nil {
		t.Fatal(err)
	}
	pinNodes(objs, []string{"n0", "n1"})
	deployments := map[string]*appsv1.Deployment{}
	hpas := map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	var services []string
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			deployments[o.Name] = o
		case *autoscalingv2.HorizontalPodAutoscaler:
			hpas[o.Name] = o
		case *corev1.Service:
			services = append(services, o.Name)
		}
	}
	wantSource := map[string]autoscalingv2.MetricSourceType{
		"web":    autoscalingv2.PodsMetricSourceType,
		"api":    autoscalingv2.ObjectMetricSourceType,
		"worker": autoscalingv2.ExternalMetricSourceType,
	}
	for _, name := range workloads {
		d, h := deployments[name], hpas[name]
		if d == nil || h == nil {
			t.Fatalf("%s: deployment %v, hpa %v; want both", name, d != nil, h != nil)
		}
		if d.Namespace != namespace || h.Namespace != namespace {
			t.Errorf("%s: namespaces %q and %q, want %q", name, d.Namespace, h.Namespace, namespace)
		}
		if d.Spec.Template.Spec.NodeName == "" {
			t.Errorf("%s: nodeName not pinned", name)
		}
		if h.Spec.ScaleTargetRef.Name != name || len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Type != wantSource[name] {
			t.Errorf("%s: hpa targets %q with metrics %+v, want %s", name, h.Spec.ScaleTargetRef.Name, h.Spec.Metrics, wantSource[name])
		}
		if b := h.Spec.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil || *b.ScaleDown.StabilizationWindowSeconds > 60 {
			t.Errorf("%s: want a scale-down stabilization window of at most 60s for the demo", name)
		}
	}
	if !slices.Contains(services, "api") {
		t.Errorf("services %v: want the api Service the Object metric describes", services)
	}
	if deployments["web"].Spec.Template.Spec.NodeName == deployments["api"].Spec.Template.Spec.NodeName &&
		deployments["api"].Spec.Template.Spec.NodeName == deployments["worker"].Spec.Template.Spec.NodeName {
		t.Error("pinNodes put every Deployment on one node")
	}
}
