package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// Run with started informers: the new HPA is evaluated at once by a worker,
// the self-metrics record it, and Run returns when its context ends.
func TestRunEvaluatesAndShutsDown(t *testing.T) {
	f := newFixture(t)
	f.target("web", 2, 2)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 20, 20)}
	createPods(t, f, "web", 2)
	if _, err := f.kube.AutoscalingV2().HorizontalPodAutoscalers("ns").Create(context.Background(),
		newHPA("web", "web", 1, 10, podsMetric("qps", "10")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	self, err := NewSelfMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg.Workers = 2
	f.build()
	f.ctrl.deps.SelfMetrics = self
	f.ctrl.deps.Clock = clock.RealClock{}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- f.ctrl.Run(ctx) }()

	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(self.decisions.WithLabelValues("up")) == 1, nil
	})
	if err != nil {
		t.Fatalf("no scale-up decision: %v", err)
	}
	if got := f.targets["web"].Spec.Replicas; got != 4 {
		t.Errorf("target at %d replicas, want 4", got)
	}
	if n := testutil.CollectAndCount(reg, "ebbflow_autoscaler_evaluation_lag_seconds"); n != 1 {
		t.Errorf("lag histogram series = %d", n)
	}
	want := `
# HELP ebbflow_autoscaler_scale_decisions_total Evaluations by outcome: up, down (scale written), none (no change), failed (no decision possible).
# TYPE ebbflow_autoscaler_scale_decisions_total counter
ebbflow_autoscaler_scale_decisions_total{direction="up"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ebbflow_autoscaler_scale_decisions_total"); err != nil {
		t.Error(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	f.factory.Shutdown()
}

// After an evaluation the key comes back one sync period later; a deleted
// object's key does not.
func TestResyncAfterSyncPeriod(t *testing.T) {
	f := newFixture(t)
	f.target("web", 3, 3)
	f.pods("web", 3)
	f.metrics.Pods = map[string]replicas.Samples{"qps": podSamples("web", 10, 10, 10)}
	hpa := newHPA("web", "web", 1, 10, podsMetric("qps", "10"))
	f.seedHPA(hpa)
	c := f.build()
	c.enqueueAfter(hpaKey, 0)
	if !c.processNextWorkItem(context.Background()) {
		t.Fatal("queue shut down")
	}
	if c.queue.Len() != 0 {
		t.Fatalf("key requeued at once")
	}
	f.clock.Step(14 * time.Second)
	if waitLen(c, 1) {
		t.Fatalf("key back before the sync period")
	}
	f.clock.Step(time.Second)
	if !waitLen(c, 1) {
		t.Fatalf("key not back after the sync period")
	}
	if err := f.factory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete(hpa); err != nil {
		t.Fatal(err)
	}
	c.processNextWorkItem(context.Background())
	f.clock.Step(time.Minute)
	if waitLen(c, 1) {
		t.Errorf("deleted object requeued")
	}
	c.queue.ShutDown()
}

// waitLen reports whether the queue reaches n items within a short time.
func waitLen(c *Controller, n int) bool {
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		return c.queue.Len() >= n, nil
	})
	return err == nil
}

// createPods creates n running, ready pods through the fake API.
func createPods(t *testing.T, f *fixture, name string, n int) {
	t.Helper()
	for i := range n {
		started := metav1.NewTime(start.Add(-time.Hour))
		_, err := f.kube.CoreV1().Pods("ns").Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: podName(name, i), Namespace: "ns", Labels: map[string]string{"app": name}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}
