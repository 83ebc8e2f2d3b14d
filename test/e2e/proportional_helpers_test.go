package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// poolLabel labels the Nodes of one test's pool; the Autoscalers under test
// count only their pool (nodeSelector), so the shared cluster's own node
// and other tests' nodes never change their counts.
const poolLabel = "e2e.ebbflow.dev/pool"

// nodePool creates kwok-managed Nodes labelled poolLabel=<name> and deletes
// them when the test ends.
type nodePool struct {
	t     testing.TB
	name  string
	mu    sync.Mutex
	nodes []string // created and not deleted, in creation order
	seq   int
}

func newNodePool(t testing.TB, name string) *nodePool {
	p := &nodePool{t: t, name: name}
	t.Cleanup(func() {
		err := env().Client().CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: poolLabel + "=" + name})
		if err != nil {
			t.Errorf("delete nodes of pool %s: %v", name, err)
		}
	})
	return p
}

// selector is the Autoscalers' nodeSelector for the pool.
func (p *nodePool) selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: p.name}}
}

// poolNode is a Node kwok manages, created Ready and Running (so that it
// counts at once and kwok's heartbeat stage keeps it Ready), whose
// allocatable cpu is its capacity less 250m: counting must use allocatable.
func poolNode(name, pool, cpu string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	allocatable := capacity.DeepCopy()
	alloc := allocatable[corev1.ResourceCPU]
	alloc.Sub(resource.MustParse("250m"))
	allocatable[corev1.ResourceCPU] = alloc
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{cluster.KwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok", poolLabel: pool, "kubernetes.io/hostname": name},
		},
		Status: corev1.NodeStatus{
			Phase:       corev1.NodeRunning,
			Capacity:    capacity,
			Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
				Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		},
	}
}

// add creates one Node per cpu value (a Quantity string) and returns their
// names.
func (p *nodePool) add(cpus ...string) []string {
	p.t.Helper()
	var names []string
	for _, cpu := range cpus {
		p.mu.Lock()
		name := fmt.Sprintf("%s-%d", p.name, p.seq)
		p.seq++
		p.mu.Unlock()
		if _, err := env().Client().CoreV1().Nodes().Create(context.Background(), poolNode(name, p.name, cpu), metav1.CreateOptions{}); err != nil {
			p.t.Fatalf("create node %s: %v", name, err)
		}
		p.mu.Lock()
		p.nodes = append(p.nodes, name)
		p.mu.Unlock()
		names = append(names, name)
	}
	return names
}

// addN creates n Nodes cycling through cpus.
func (p *nodePool) addN(n int, cpus ...string) []string {
	all := make([]string, n)
	for i := range all {
		all[i] = cpus[i%len(cpus)]
	}
	return p.add(all...)
}

// remove deletes the n Nodes created first (still present).
func (p *nodePool) remove(n int) {
	p.t.Helper()
	p.mu.Lock()
	gone := append([]string(nil), p.nodes[:n]...)
	p.nodes = p.nodes[n:]
	p.mu.Unlock()
	for _, name := range gone {
		if err := env().Client().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			p.t.Fatalf("delete node %s: %v", name, err)
		}
	}
}

// cordon sets spec.unschedulable of node name.
func (p *nodePool) cordon(name string, on bool) {
	p.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
	if _, err := env().Client().CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		p.t.Fatalf("cordon %s: %v", name, err)
	}
}

// size counts the pool's Nodes as the API server has them now, with
// proportional.Count: the expectation of every check.
func (p *nodePool) size() proportional.ClusterSize {
	p.t.Helper()
	list, err := env().Client().CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: poolLabel + "=" + p.name})
	if err != nil {
		p.t.Fatalf("list nodes of pool %s: %v", p.name, err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return proportional.Count(nodes)
}

// ebb returns a clientset for Autoscalers.
func ebb(t testing.TB) ebbclient.Interface {
	t.Helper()
	c, err := ebbclient.NewForConfig(env().RESTConfig())
	if err != nil {
		t.Fatalf("ebbflow clientset: %v", err)
	}
	return c
}

// clusterMetric is a ClusterProportional metric.
func clusterMetric(src v1alpha1.ClusterProportionalSource) v1alpha1.MetricSpec {
	return v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{Type: v1alpha1.ClusterProportionalMetricSourceType}, ClusterProportional: &src}
}

// createAutoscaler creates an Autoscaler of the Deployment of the same name
// with minReplicas 1, maxReplicas maxR, behavior b (nil: immediateBehavior)
// and metrics.
func createAutoscaler(t testing.TB, ns, name string, maxR int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, metrics ...v1alpha1.MetricSpec) {
	t.Helper()
	if b == nil {
		b = immediateBehavior()
	}
	a := &v1alpha1.Autoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: maxR, Metrics: metrics, Behavior: b,
		},
	}
	if _, err := ebb(t).AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler %s/%s: %v", ns, name, err)
	}
}

// immediateBehavior lets every change through at once, as CPA resizes (and
// as from-cpa writes).
func immediateBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func() *autoscalingv2.HPAScalingRules {
		return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10000, PeriodSeconds: 1}}}
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(), ScaleDown: rules()}
}

// propTimeout bounds the wait for a reaction to a node or ConfigMap event:
// the controller reacts within a second; the bound leaves room for a loaded
// machine (it is not a latency assertion: see `make bench-reaction`).
const propTimeout = 30 * time.Second

// waitProportional waits until the Deployment has exactly want replicas.
func waitProportional(t testing.TB, ns, name string, want int32, why string) {
	t.Helper()
	start := time.Now()
	var last int32 = -1
	waitUntil(t, 100*time.Millisecond, propTimeout, fmt.Sprintf("%s/%s: replicas, want %d (%s)", ns, name, want, why),
		func() string { return fmt.Sprintf("last read %d replicas\n%s", last, autoscalerStatus(ns, name)) }, func(ctx context.Context) bool {
			r, err := deploymentReplicas(ctx, ns, name)
			if err != nil {
				return false
			}
			last = r
			if r == want {
				t.Logf("%s/%s: %d replicas after %v (%s)", ns, name, r, time.Since(start).Round(time.Millisecond), why)
			}
			return r == want
		})
}

// waitProp waits up to propTimeout, checking every 200 ms, until cond holds,
// and fails the test with what and the Autoscaler's state if it does not.
func waitProp(t testing.TB, ns, name, what string, cond func(context.Context) bool) {
	t.Helper()
	waitUntil(t, 200*time.Millisecond, propTimeout, ns+"/"+name+": "+what, func() string { return autoscalerStatus(ns, name) }, cond)
}

// expectReplicas computes with proportional.Replicas the count params give
// for the pool as it is now, waits for the Deployment to have it, and
// returns it.
func expectReplicas(t testing.TB, ns, name string, pool *nodePool, p proportional.Params, why string) int32 {
	t.Helper()
	size := pool.size()
	want := proportional.Replicas(p, size)
	waitProportional(t, ns, name, want, fmt.Sprintf("%s: %s", why, proportional.Explain(p, size)))
	return want
}

// holdReplicas checks every 250 ms that the Deployment keeps want replicas
// for d.
func holdReplicas(t testing.TB, ns, name string, want int32, d time.Duration) {
	t.Helper()
	if err := replicasHeld(ns, name, want, d, 250*time.Millisecond); err != nil {
		t.Fatalf("%v\n%s", err, autoscalerStatus(ns, name))
	}
}

// autoscalerCondition returns the Autoscaler's condition of type typ.
func propCondition(t testing.TB, ns, name string, typ autoscalingv2.HorizontalPodAutoscalerConditionType) (autoscalingv2.HorizontalPodAutoscalerCondition, bool) {
	a, err := ebb(t).AutoscalingV1alpha1().Autoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
	}
	for _, c := range a.Status.Conditions {
		if c.Type == typ {
			return c, true
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
}

// startAutoscaler starts ebbflow-autoscaler with the options the other
// e2e tests use (so a running one is reused).
func startAutoscaler(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := env().StartAutoscaler(ctx, cluster.AutoscalerOptions{HPAMode: "off", Args: []string{"--v=2"}}); err != nil {
		t.Fatal(err)
	}
}
