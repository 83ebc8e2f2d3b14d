package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1/v1alpha1test"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

func node(name, cpu string, ready, cordoned bool) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": "default"}},
		Spec:       corev1.NodeSpec{Unschedulable: cordoned},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

// proportionalFixture is a fixture whose controller watches nodes and
// ConfigMaps through seeded informers.
func proportionalFixture(t *testing.T, a *v1alpha1.Autoscaler, nodes ...*corev1.Node) (*fixture, *autoscalerLoop) {
	f := newFixture(t)
	f.target("dns", 1, 1)
	for _, n := range nodes {
		if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	f.deps = func(d *Deps) { d.Cluster = seededCluster(f, f.factory.Core().V1().Nodes().Informer()) }
	return f, newAutoscalerLoop(f, a)
}

// seededCluster gives the controller f's node (nodes) and ConfigMap
// informers as tests seed them: filled through their indexers, never
// started, so synced from the start.
func seededCluster(f *fixture, nodes cache.SharedIndexInformer) func() (ClusterInformers, error) {
	return func() (ClusterInformers, error) {
		return ClusterInformers{Nodes: seeded{nodes}, ConfigMaps: seeded{f.factory.Core().V1().ConfigMaps().Informer()}, Start: func() {}}, nil
	}
}

// seeded is an informer filled by the test: synced, never started.
type seeded struct{ cache.SharedIndexInformer }

func (seeded) HasSynced() bool { return true }

func dnsAutoscaler(src v1alpha1.ClusterProportionalSource, extra ...v1alpha1.MetricSpec) *v1alpha1.Autoscaler {
	hpa := newHPA("dns", "dns", 1, 100)
	a := &v1alpha1.Autoscaler{ObjectMeta: hpa.ObjectMeta, Spec: v1alpha1test.FromHPASpec(&hpa.Spec)}
	a.Spec.Metrics = append([]v1alpha1.MetricSpec{{
		MetricSpec:          autoscalingMetric(v1alpha1.ClusterProportionalMetricSourceType),
		ClusterProportional: &src,
	}}, extra...)
	return a
}

// A linear Autoscaler with no other metric needs no metrics API: 21 cores at
// 0.7 per replica give CPA's 31 (float64 rounding), above the nodes term.
func TestProportionalLinear(t *testing.T) {
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{CoresPerReplica: 0.7, NodesPerReplica: 1}})
	a.Spec.Behavior = immediate()
	f, l := proportionalFixture(t, a, node("a", "10", true, false), node("b", "11", true, false), node("c", "4", false, false))
	if got := l.step(); !slices.Equal(got, []int32{31}) {
		t.Fatalf("scale writes %v, want [31]", got)
	}
	if f.metrics.Calls() != 0 {
		t.Errorf("%d metrics API calls for a ClusterProportional-only Autoscaler", f.metrics.Calls())
	}
	rec := l.obj.Status.LastDecision
	if rec == nil || len(rec.Metrics) != 1 || !strings.Contains(rec.Metrics[0].Reason, "3 nodes, 25 cores (2 and 21 schedulable)") {
		t.Fatalf("record %+v", rec)
	}
	cm := l.obj.Status.CurrentMetrics
	want := v1alpha1.ClusterProportionalStatus{Nodes: 3, Cores: 25, SchedulableNodes: 2, SchedulableCores: 21, Replicas: 31}
	if len(cm) != 1 || cm[0].Type != v1alpha1.ClusterProportionalMetricSourceType || cm[0].ClusterProportional == nil || *cm[0].ClusterProportional != want {
		t.Errorf("status.currentMetrics = %+v, want one ClusterProportional entry %+v", cm, want)
	}
	// A node joins: the dependants are evaluated at once.
	n := node("d", "7", true, false)
	if err := f.factory.Core().V1().Nodes().Informer().GetIndexer().Add(n); err != nil {
		t.Fatal(err)
	}
	w := f.ctrl.cluster.built()
	w.counters.Update(n)
	if keys := w.users["sel:"]; len(keys) != 1 {
		t.Errorf("dependants of every node: %v", w.users)
	}
	if got := l.step(); !slices.Equal(got, []int32{40}) {
		t.Errorf("after a node joined: scale writes %v, want [40] (28 cores / 0.7)", got)
	}
}

// The max of a ClusterProportional and a Pods metric wins.
func TestProportionalCombinesByMaximum(t *testing.T) {
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{Ladder: &v1alpha1.LadderParams{NodesToReplicas: [][]int64{{1, 2}, {3, 3}}}},
		v1alpha1.MetricSpec{MetricSpec: podsMetric("qps", "10")})
	a.Spec.Behavior = immediate()
	f, l := proportionalFixture(t, a, node("a", "1", true, false), node("b", "1", true, false), node("c", "1", true, false))
	f.pods("dns", 1)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("dns", 10)}
	if got := l.step(); !slices.Equal(got, []int32{3}) {
		t.Fatalf("ladder alone: %v, want [3]", got)
	}
	f.target("dns", 3, 3)
	f.pods("dns", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("dns", 30, 30, 30)}
	f.clock.Step(15 * time.Second)
	if got := l.step(); !slices.Equal(got, []int32{9}) {
		t.Errorf("pods metric above the ladder: %v, want [9]", got)
	}
}

// A CPA ConfigMap by reference: edited, the new params apply; deleted, the
// last good params stay and the condition and an event say why.
func TestProportionalConfigMap(t *testing.T) {
	a := dnsAutoscaler(v1alpha1.ClusterProportionalSource{ConfigMapRef: &v1alpha1.ConfigMapKeyRef{Name: "dns-autoscaler"}})
	a.Spec.Behavior = immediate()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dns-autoscaler"},
		Data: map[string]string{"linear": `{"nodesPerReplica": 1}`}}
	f, l := proportionalFixture(t, a, node("a", "1", true, false), node("b", "1", true, false))
	cms := f.factory.Core().V1().ConfigMaps().Informer().GetIndexer()
	if err := cms.Add(cm); err != nil {
		t.Fatal(err)
	}
	if got := l.step(); !slices.Equal(got, []int32{2}) {
		t.Fatalf("scale writes %v, want [2]", got)
	}
	cm = cm.DeepCopy()
	cm.Data["linear"] = `{"nodesPerReplica": 0.5}`
	if err := cms.Update(cm); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	if got := l.step(); !slices.Equal(got, []int32{4}) {
		t.Fatalf("after the edit: %v, want [4]", got)
	}
	if err := cms.Delete(cm); err != nil {
		t.Fatal(err)
	}
	f.events()
	f.clock.Step(time.Second)
	if got := l.step(); len(got) != 0 {
		t.Fatalf("after the delete: %v, want no change", got)
	}
	var found bool
	for _, c := range l.obj.Status.Conditions {
		if c.Type == evaluation.ConditionProportionalParams {
			found = true
			if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "ConfigMap ns/dns-autoscaler not found (keeping the last good parameters)") {
				t.Errorf("condition %+v", c)
			}
		}
	}
	if !found {
		t.Error("no ProportionalParams condition")
	}
	if ev := f.events(); len(ev) == 0 || !strings.Contains(strings.Join(ev, "\n"), "Warning InvalidProportionalParams") {
		t.Errorf("events %q", ev)
	}
}

func autoscalingMetric(t autoscalingv2.MetricSourceType) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: t}
}

// immediate is the behavior from-cpa writes: no stabilization, any jump.
func immediate() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func() *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10000, PeriodSeconds: 1}}}
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(), ScaleDown: rules()}
}
