package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	"github.com/ebbflow/ebbflow/autoscaler/proportional"
)

// TestProportional runs ClusterProportional metrics on the local cluster:
// kwok Nodes of a pool of the test's own (labelled, counted through
// nodeSelector) are added, removed and cordoned, and the Deployments'
// replicas must become exactly what proportional.Replicas computes for the
// pool as the API server holds it — the function the CPA parity tests pin
// to cluster-proportional-autoscaler's answers.
func TestProportional(t *testing.T) {
	startAutoscaler(t)
	t.Run("Linear", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "e2e-prop-linear-")
		pool := newNodePool(t, ns)
		createDeployment(t, ns, "dns")
		l := &v1alpha1.LinearParams{CoresPerReplica: 16, NodesPerReplica: 4, Min: 2, PreventSinglePointFailure: true}
		createAutoscaler(t, ns, "dns", 100, nil, clusterMetric(v1alpha1.ClusterProportionalSource{Linear: l, NodeSelector: pool.selector()}))
		p := proportional.Params{Linear: &proportional.Linear{CoresPerReplica: 16, NodesPerReplica: 4, Min: 2, PreventSinglePointFailure: true}}
		// One node: min 2 (single-point-failure needs more than one node).
		pool.add("4")
		if got := expectReplicas(t, ns, "dns", pool, p, "1 node"); got != 2 {
			t.Errorf("1 node: %d replicas, want CPA's 2", got)
		}
		// 24 nodes, allocatable cpu summed and rounded up once: 3.75 +
		// 8 × 7.75 + 8 × 3.25 + 7 × 3.75 = 118 cores: ceil(118/16) = 8, above
		// the nodes term ceil(24/4) = 6.
		pool.addN(23, "8", "3500m", "4")
		if got := expectReplicas(t, ns, "dns", pool, p, "24 nodes"); got != 8 {
			t.Errorf("24 nodes: %d replicas, want 8", got)
		}
		pool.remove(20)
		expectReplicas(t, ns, "dns", pool, p, "4 nodes left")
	})
	t.Run("Ladder", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "e2e-prop-ladder-")
		pool := newNodePool(t, ns)
		createDeployment(t, ns, "dns")
		// Unsorted rows, as CPA accepts them (it sorts).
		cores := [][]int64{{64, 4}, {1, 1}, {128, 6}, {16, 2}}
		nodes := [][]int64{{1, 1}, {10, 3}, {30, 5}}
		createAutoscaler(t, ns, "dns", 100, nil, clusterMetric(v1alpha1.ClusterProportionalSource{
			Ladder: &v1alpha1.LadderParams{CoresToReplicas: cores, NodesToReplicas: nodes}, NodeSelector: pool.selector()}))
		p := proportional.Params{Ladder: &proportional.Ladder{
			CoresToReplicas: [][]int{{64, 4}, {1, 1}, {128, 6}, {16, 2}}, NodesToReplicas: [][]int{{1, 1}, {10, 3}, {30, 5}}}}
		pool.addN(5, "4")
		expectReplicas(t, ns, "dns", pool, p, "5 nodes")
		pool.addN(25, "8", "4")
		if got := expectReplicas(t, ns, "dns", pool, p, "30 nodes"); got != 6 {
			t.Errorf("30 nodes: %d replicas, want 6 (cores row 128)", got)
		}
		pool.remove(22)
		expectReplicas(t, ns, "dns", pool, p, "8 nodes left")
	})
	t.Run("Cordon", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t, "e2e-prop-cordon-")
		pool := newNodePool(t, ns)
		names := pool.addN(5, "2")
		for _, include := range []bool{false, true} {
			name := map[bool]string{false: "sched", true: "all"}[include]
			createDeployment(t, ns, name)
			createAutoscaler(t, ns, name, 100, nil, clusterMetric(v1alpha1.ClusterProportionalSource{
				Linear: &v1alpha1.LinearParams{NodesPerReplica: 1, IncludeUnschedulableNodes: include}, NodeSelector: pool.selector()}))
		}
		sched := proportional.Params{Linear: &proportional.Linear{NodesPerReplica: 1}}
		all := proportional.Params{Linear: &proportional.Linear{NodesPerReplica: 1, IncludeUnschedulableNodes: true}}
		expectReplicas(t, ns, "sched", pool, sched, "5 nodes")
		pool.cordon(names[0], true)
		pool.cordon(names[1], true)
		if got := expectReplicas(t, ns, "sched", pool, sched, "2 of 5 cordoned"); got != 3 {
			t.Errorf("2 of 5 nodes cordoned: %d replicas, want 3", got)
		}
		if got := expectReplicas(t, ns, "all", pool, all, "2 of 5 cordoned, includeUnschedulableNodes"); got != 5 {
			t.Errorf("includeUnschedulableNodes: %d replicas, want 5", got)
		}
		pool.cordon(names[1], false)
		expectReplicas(t, ns, "sched", pool, sched, "1 of 5 cordoned")
		holdReplicas(t, ns, "all", 5, time.Second)
	})
	t.Run("ConfigMap", func(t *testing.T) { t.Parallel(); testProportionalConfigMap(t) })
	t.Run("WithPodsMetric", func(t *testing.T) { t.Parallel(); testProportionalWithPods(t) })
	t.Run("FromCPAValidates", func(t *testing.T) { t.Parallel(); testFromCPAValidates(t) })
}

// testProportionalConfigMap migrates a CPA with `ebbflow proportional
// from-cpa` (configMapRef, applied with kubectl), then edits CPA's ConfigMap
// live, deletes it (the last good params stay, the ProportionalParams
// condition turns False, a Warning event names the problem, and node
// changes still apply) and recreates it.
func testProportionalConfigMap(t *testing.T) {
	ns := newNamespace(t, "e2e-prop-cm-")
	pool := newNodePool(t, ns)
	pool.addN(6, "2")
	createDeployment(t, ns, "dns")
	cms := env().Client().CoreV1().ConfigMaps(ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dns-autoscaler"},
		Data: map[string]string{"linear": `{"nodesPerReplica": 2, "min": 1}`}}
	if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest := fromCPA(t, "", "--target=deployment/dns", "--configmap=dns-autoscaler", "--namespace="+ns,
		"--nodelabels="+poolLabel+"="+pool.name, "--max-replicas=50", `--default-params={"linear":{"nodesPerReplica":2,"min":1}}`)
	if out, err := kubectlIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
	linear := func(perReplica float64) proportional.Params {
		return proportional.Params{Linear: &proportional.Linear{NodesPerReplica: perReplica, Min: 1}}
	}
	if got := expectReplicas(t, ns, "dns", pool, linear(2), "ConfigMap nodesPerReplica 2"); got != 3 {
		t.Errorf("6 nodes at 2 per replica: %d, want 3", got)
	}
	cm.Data["linear"] = `{"nodesPerReplica": 1, "min": 1}`
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectReplicas(t, ns, "dns", pool, linear(1), "ConfigMap edited: nodesPerReplica 1")
	if err := cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAutoscalerCondition(t, ns, "dns", evaluation.ConditionProportionalParams, corev1.ConditionFalse, "not found (keeping the last good parameters)")
	waitEvent(t, ns, "dns", corev1.EventTypeWarning, "InvalidProportionalParams")
	holdReplicas(t, ns, "dns", 6, 2*time.Second)
	pool.addN(2, "2")
	if got := expectReplicas(t, ns, "dns", pool, linear(1), "ConfigMap gone, 2 nodes joined: last good params"); got != 8 {
		t.Errorf("8 nodes with the last good params: %d, want 8", got)
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dns-autoscaler"},
		Data: map[string]string{"linear": `{"nodesPerReplica": 4, "min": 1}`}}
	if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectReplicas(t, ns, "dns", pool, linear(4), "ConfigMap recreated: nodesPerReplica 4")
	waitAutoscalerCondition(t, ns, "dns", evaluation.ConditionProportionalParams, corev1.ConditionTrue, "")
}

// testProportionalWithPods combines a ClusterProportional metric with a
// Pods metric: the larger proposal wins, and the behaviors limit it like
// any other.
func testProportionalWithPods(t *testing.T) {
	ns := newNamespace(t, "e2e-prop-pods-")
	pool := newNodePool(t, ns)
	pool.addN(3, "2")
	d := diffDeployment("web")
	d.Spec.Replicas = ptr.To[int32](3)
	if _, err := env().Client().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := newDiffPublisher(diffEnv{c: env(), e: exp()}, ns)
	t.Cleanup(pub.clear)
	perPod := newPerPodValue(t, pub, 5)
	// Scale-up: at most 2 pods per minute; scale-down: immediate.
	b := immediateBehavior()
	b.ScaleUp.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}
	p := proportional.Params{Linear: &proportional.Linear{NodesPerReplica: 1}}
	createAutoscaler(t, ns, "web", 20, b,
		clusterMetric(v1alpha1.ClusterProportionalSource{Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}, NodeSelector: pool.selector()}),
		v1alpha1.MetricSpec{MetricSpec: autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: InflightGauge}, Target: averageValue("10")}}})
	// 5 per pod against 10 wants 2 of the 3 pods: the 3 nodes win.
	waitPropDecision(t, ns, "web", func(d *v1alpha1.DecisionRecord) bool {
		return strings.HasPrefix(d.WinningMetric, "cluster-proportional") && d.DesiredReplicas == 3
	}, "cluster-proportional wins at 3")
	// 40 per pod wants 12: the Pods metric wins, the scale-up policy lets
	// 2 pods through.
	perPod.set(40)
	waitProportional(t, ns, "web", 5, "Pods metric wins, scale-up policy +2")
	holdReplicas(t, ns, "web", 5, 6*time.Second)
	waitPropDecision(t, ns, "web", func(d *v1alpha1.DecisionRecord) bool {
		return d.WinningMetric != "" && !strings.HasPrefix(d.WinningMetric, "cluster-proportional") && d.Proposal != nil && *d.Proposal > 5
	}, "Pods metric proposes more than 5")
	// Idle pods: the nodes count wins again, scale-down is immediate.
	perPod.set(0)
	expectReplicas(t, ns, "web", pool, p, "idle pods: back to the nodes count")
}

// perPodValue republishes a per-pod value for every pod of the namespace
// twice a second until the test ends (new pods get it at once).
type perPodValue struct{ v chan float64 }

func newPerPodValue(t *testing.T, pub *diffPublisher, v float64) *perPodValue {
	p := &perPodValue{v: make(chan float64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			pub.apply(ctx, diffStep{values: map[string]float64{keyPods: v}})
			select {
			case <-ctx.Done():
				return
			case v = <-p.v:
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

func (p *perPodValue) set(v float64) { p.v <- v }
