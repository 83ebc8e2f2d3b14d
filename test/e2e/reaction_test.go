package e2e

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// BenchmarkProportionalReaction measures the reaction time of a
// ClusterProportional metric on the local cluster: from the Node create
// (or delete) call to the moment a watch on the target Deployment sees
// spec.replicas changed by ebbflow-autoscaler's /scale write. Each event
// changes the count by one (linear, nodesPerReplica 1) and waits for the
// write before the next; to a pool of one node, EBBFLOW_REACTION_EVENTS
// (default 30) nodes are added one by one, then as many deleted one by one. It reports p50, p99 and max
// over all events (nearest rank) and each direction's p50. It is a
// benchmark, never part of `make test`; run it alone:
//
//	make bench-reaction
//	go test -count=1 -run '^$' -bench BenchmarkProportionalReaction -benchtime 1x ./test/e2e/
//
// cluster-proportional-autoscaler polls every 10 s (--poll-period-seconds):
// its reaction time is between 0 and 10 s plus its own work.
func BenchmarkProportionalReaction(b *testing.B) {
	events := 30
	if v := os.Getenv("EBBFLOW_REACTION_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			b.Fatalf("EBBFLOW_REACTION_EVENTS=%q: want 1..500", v)
		}
		events = n
	}
	startAutoscaler(b)
	var adds, dels []time.Duration
	for range b.N {
		a, d := reactionRun(b, events)
		adds, dels = append(adds, a...), append(dels, d...)
	}
	all := append(slices.Clone(adds), dels...)
	b.ReportMetric(ms(quantile(all, 0.5)), "p50-ms")
	b.ReportMetric(ms(quantile(all, 0.99)), "p99-ms")
	b.ReportMetric(ms(quantile(all, 1)), "max-ms")
	b.ReportMetric(ms(quantile(adds, 0.5)), "p50-add-ms")
	b.ReportMetric(ms(quantile(dels, 0.5)), "p50-delete-ms")
	b.ReportMetric(float64(len(all)), "events")
	b.Logf("node added → /scale written: %v", adds)
	b.Logf("node deleted → /scale written: %v", dels)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the nearest-rank q-quantile of ds (q in (0, 1]).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// reactionRun adds then deletes n nodes of a fresh pool, one at a time, and
// returns the reaction time of each event.
func reactionRun(b *testing.B, n int) (adds, dels []time.Duration) {
	ctx := context.Background()
	ns := newNamespace(b, "e2e-prop-reaction-")
	pool := newNodePool(b, ns)
	deps := env().Client().AppsV1().Deployments(ns)
	// Its pods stay Pending (no nodeName, no scheduler): no kubelet work.
	labels := map[string]string{"app": "dns"}
	d, err := deps.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "dns", Image: "registry.k8s.io/pause:3.10"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w, err := deps.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=dns", ResourceVersion: d.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	createAutoscaler(b, ns, "dns", 1000, nil, clusterMetric(v1alpha1.ClusterProportionalSource{
		Linear: &v1alpha1.LinearParams{NodesPerReplica: 1}, NodeSelector: pool.selector()}))
	// One node: 1 replica, the Deployment's count, nothing to write. Each
	// event below changes the count by one.
	pool.add("4")
	time.Sleep(time.Second)
	for i := 2; i <= n+1; i++ {
		start := time.Now()
		pool.add("4")
		adds = append(adds, awaitReplicas(b, w, int32(i), start))
		time.Sleep(100 * time.Millisecond)
	}
	for i := n; i >= 1; i-- {
		start := time.Now()
		pool.remove(1)
		dels = append(dels, awaitReplicas(b, w, int32(i), start))
		time.Sleep(100 * time.Millisecond)
	}
	return adds, dels
}

// awaitReplicas reads the watch until the Deployment has want replicas and
// returns the time since start.
func awaitReplicas(b *testing.B, w watch.Interface, want int32, start time.Time) time.Duration {
	timeout := time.After(propTimeout)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("deployment watch closed")
			}
			if d, isDep := ev.Object.(*appsv1.Deployment); isDep && ptr.Deref(d.Spec.Replicas, 1) == want {
				return time.Since(start)
			}
		case <-timeout:
			b.Fatalf("no write of %d replicas within %v", want, propTimeout)
		}
	}
}
