package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
	"github.com/ebbflow/ebbflow/autoscaler/evaluation"
	ebbclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Timings of the scale-to-zero and fallback scenarios (sync period 5s,
// scrape interval 1s).
const (
	idleAfter     = 20 * time.Second // spec.scaleToZero.after
	fallbackAfter = 10 * time.Second // spec.fallback.after
	// holdAtZero is how long a queue below activation must keep zero
	// replicas: three sync periods.
	holdAtZero = 15 * time.Second
)

// startQueueAutoscaler starts ebbflow-autoscaler (startAutoscaler) and
// returns a client of the ebbflow API; it logs the autoscaler's log tail if
// the test fails.
func startQueueAutoscaler(t *testing.T) ebbclient.Interface {
	t.Helper()
	startAutoscaler(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ebbflow-autoscaler log tail:\n%s", env().LogTail(cluster.Autoscaler, 60))
		}
	})
	return ebbClient(t)
}

// queueAutoscaler is an Autoscaler of the Deployment name on the queue's
// external metric with target AverageValue 10 per replica.
func queueAutoscaler(name string, q testQueue, minR, maxR int32, activation *resource.Quantity) *v1alpha1.Autoscaler {
	m := v1alpha1.MetricSpec{MetricSpec: externalMetric(q, averageValue("10")), Activation: activation}
	return &v1alpha1.Autoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.AutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(minR), MaxReplicas: maxR,
			Metrics: []v1alpha1.MetricSpec{m},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
			},
		},
	}
}

func createQueueAutoscaler(t *testing.T, client ebbclient.Interface, ns string, a *v1alpha1.Autoscaler) {
	t.Helper()
	if _, err := client.AutoscalingV1alpha1().Autoscalers(ns).Create(context.Background(), a, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create autoscaler %s/%s: %v", ns, a.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(autoscalerStatus(ns, a.Name))
		}
	})
}

// replicaTrace samples a Deployment's spec.replicas every second and keeps
// every change, until stopped.
type replicaTrace struct {
	mu     sync.Mutex
	values []int32
	times  []time.Duration
	stop   chan struct{}
	done   chan struct{}
}

func traceReplicas(t *testing.T, ns, name string) *replicaTrace {
	tr := &replicaTrace{stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(tr.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := deploymentReplicas(ctx, ns, name)
			cancel()
			if err == nil {
				tr.mu.Lock()
				if n := len(tr.values); n == 0 || tr.values[n-1] != r {
					tr.values, tr.times = append(tr.values, r), append(tr.times, time.Since(start).Round(time.Second))
				}
				tr.mu.Unlock()
			}
			select {
			case <-tr.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(tr.close)
	return tr
}

func (tr *replicaTrace) close() {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	<-tr.done
}

// waitLast waits up to timeout for the trace's last value to be v.
func (tr *replicaTrace) waitLast(v int32, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		n := len(tr.values)
		last := n > 0 && tr.values[n-1] == v
		tr.mu.Unlock()
		if last {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshot returns the replica values seen, in order, and a text of each
// value with the time it was first seen.
func (tr *replicaTrace) snapshot() ([]int32, string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var b strings.Builder
	for i, v := range tr.values {
		fmt.Fprintf(&b, "%d@%v ", v, tr.times[i])
	}
	return append([]int32(nil), tr.values...), strings.TrimSpace(b.String())
}

// keepReplicas checks every second for d that the Deployment keeps want
// replicas.
func keepReplicas(t *testing.T, ns, name string, want int32, d time.Duration, why string) {
	t.Helper()
	if err := replicasHeld(ns, name, want, d, hpaPollInterval); err != nil {
		t.Fatalf("%v (%s)\n%s", err, why, autoscalerStatus(ns, name))
	}
	t.Logf("%s/%s: held %d replicas for %v (%s)", ns, name, want, d, why)
}

// TestScaleToZeroWithActivation: a queue worker (External metric, 10
// messages per replica, activation 5, scaleToZero.after 20s, scale-down
// policy 50% per 5s) goes to zero on an empty queue, stays there while the
// queue holds fewer messages than the activation, wakes to 1 and on to 6,
// and, once the queue drains, steps down through the Percent policy to 0 —
// never from more than 1 straight to 0.
func TestScaleToZeroWithActivation(t *testing.T) {
	client := startQueueAutoscaler(t)
	ns := newNamespace(t, "e2e-zero-")
	q := setQueue(t, ns, 0)
	createDeployment(t, ns, "worker")
	a := queueAutoscaler("worker", q, 0, 8, ptr.To(resource.MustParse("5")))
	a.Spec.ScaleToZero = &v1alpha1.ScaleToZeroSpec{After: &metav1.Duration{Duration: idleAfter}}
	a.Spec.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 5}}
	createQueueAutoscaler(t, client, ns, a)
	trace := traceReplicas(t, ns, "worker")

	waitReplicas(t, ns, "worker", idleAfter+time.Minute, "0 (empty queue)", func(r int32) bool { return r == 0 })
	waitAutoscalerReason(t, ns, "worker", autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero")

	q.set(3) // above 0, at or below activation
	keepReplicas(t, ns, "worker", 0, holdAtZero, "queue 3 <= activation 5")
	waitDecisionStep(t, ns, "worker", "Activation", "at or below its activation")

	q.set(8) // above activation: ceil(8/10) = 1
	waitReplicas(t, ns, "worker", scaleUpTimeout, "1 (activated)", func(r int32) bool { return r == 1 })
	q.set(60)
	waitReplicas(t, ns, "worker", scaleUpTimeout, "6", func(r int32) bool { return r == 6 })

	drained := time.Now()
	q.set(0)
	waitReplicas(t, ns, "worker", idleAfter+2*time.Minute, "0 (drained)", func(r int32) bool { return r == 0 })
	if el := time.Since(drained); el < idleAfter {
		t.Errorf("at zero %v after the queue drained, before scaleToZero.after %v", el, idleAfter)
	}
	trace.waitLast(0, 5*time.Second) // the sampler may not have seen it yet
	trace.close()
	vals, text := trace.snapshot()
	t.Logf("replica trace (replicas@since start): %s", text)
	checkZeroTrace(t, vals)
}

// checkZeroTrace checks the trace 1 → 0 → 1 → … → 6 → … → 0: never a jump
// from above 1 to 0, never more than halving in one step down (the 50%
// policy), and at least one step between 6 and 0.
func checkZeroTrace(t *testing.T, vals []int32) {
	t.Helper()
	peak, between := int32(0), 0
	for i := 1; i < len(vals); i++ {
		prev, cur := vals[i-1], vals[i]
		if cur == 0 && prev > 1 {
			t.Errorf("trace %v: %d → 0 in one step", vals, prev)
		}
		if cur < prev && cur < prev/2 {
			t.Errorf("trace %v: %d → %d exceeds the 50%% policy", vals, prev, cur)
		}
		peak = max(peak, cur)
		if peak == 6 && cur > 0 && cur < 6 {
			between++
		}
	}
	if peak != 6 || between == 0 || vals[len(vals)-1] != 0 {
		t.Errorf("trace %v: want a peak of 6 and steps down to 0", vals)
	}
}

// TestFallbackPrometheusStopped stops Prometheus under three Autoscalers at
// 3 replicas whose queues then change: "hold" (fallback Hold) must keep 3 all
// along; "five" (fallback Replicas 5) goes to 5 once fallback.after has
// passed; "act" (no fallback, minReplicas 0 with an activation) must keep 3:
// a failed metric blocks a scale-down, activation or not. hold and five
// report Fallback=True and FallbackActivated; with Prometheus back the
// normal algorithm takes over (FallbackCleared, the replicas of the current
// queues).
func TestFallbackPrometheusStopped(t *testing.T) {
	client := startQueueAutoscaler(t)
	ns := newNamespace(t, "e2e-fallback-")
	qHold, qFive, qAct := setQueue(t, ns+"-hold", 30), setQueue(t, ns+"-five", 30), setQueue(t, ns+"-act", 30)
	createDeployment(t, ns, "hold")
	createDeployment(t, ns, "five")
	createDeployment(t, ns, "act")
	hold := queueAutoscaler("hold", qHold, 1, 8, nil)
	hold.Spec.Fallback = &v1alpha1.FallbackSpec{Policy: v1alpha1.FallbackHold, After: &metav1.Duration{Duration: fallbackAfter}}
	five := queueAutoscaler("five", qFive, 1, 8, nil)
	five.Spec.Fallback = &v1alpha1.FallbackSpec{Policy: v1alpha1.FallbackReplicas, Replicas: ptr.To[int32](5), After: &metav1.Duration{Duration: fallbackAfter}}
	createQueueAutoscaler(t, client, ns, hold)
	createQueueAutoscaler(t, client, ns, five)
	act := queueAutoscaler("act", qAct, 0, 8, ptr.To(resource.MustParse("5")))
	act.Spec.ScaleToZero = &v1alpha1.ScaleToZeroSpec{After: &metav1.Duration{Duration: idleAfter}}
	createQueueAutoscaler(t, client, ns, act)
	for _, name := range []string{"hold", "five", "act"} {
		waitReplicas(t, ns, name, scaleUpTimeout, "3", func(r int32) bool { return r == 3 })
	}
	// No Fallback condition yet: it appears once the fallback has applied.

	prom := env().Prometheus()
	prom.Stop()
	t.Cleanup(func() {
		if !prom.Running() {
			ensurePrometheus(t)
		}
	})
	stopped := time.Now()
	qHold.set(0)  // would scale hold down to 1
	qFive.set(30) // unchanged: only the fallback moves five
	qAct.set(0)   // would scale act down, and to zero after idleAfter
	// Off the test goroutine: no t.Fatal, results checked after Wait.
	var wg sync.WaitGroup
	var fiveAt time.Time
	var fiveErr, actErr error
	wg.Go(func() {
		fiveAt, fiveErr = pollUntil(conditionTimeout, func(ctx context.Context) bool {
			a, err := getAutoscaler(ctx, ns, "five")
			return err == nil && hasConditionReason(a, evaluation.ConditionFallback, corev1.ConditionTrue, "FallbackReplicas")
		})
	})
	wg.Go(func() { actErr = replicasHeld(ns, "act", 3, fallbackAfter+holdAtZero, hpaPollInterval) })
	keepReplicas(t, ns, "hold", 3, fallbackAfter+holdAtZero, "Prometheus stopped, fallback Hold")
	wg.Wait()
	if actErr != nil {
		t.Errorf("act (activation, no fallback): %v\n%s", actErr, autoscalerStatus(ns, "act"))
	}
	if fiveErr != nil {
		t.Fatalf("five: Fallback=True (FallbackReplicas): %v\n%s", fiveErr, autoscalerStatus(ns, "five"))
	}
	if el := fiveAt.Sub(stopped); el < fallbackAfter {
		t.Errorf("five: Fallback=True %v after Prometheus stopped, before fallback.after %v", el, fallbackAfter)
	}
	waitReplicas(t, ns, "five", conditionTimeout, "5 (fallback)", func(r int32) bool { return r == 5 })
	waitAutoscalerEvent(t, ns, "five", "FallbackActivated")
	waitAutoscalerReason(t, ns, "hold", evaluation.ConditionFallback, corev1.ConditionTrue, "FallbackHold")
	waitAutoscalerEvent(t, ns, "hold", "FallbackActivated")
	keepReplicas(t, ns, "hold", 3, 2*time.Second, "fallback Hold active")

	ensurePrometheus(t)
	waitReplicas(t, ns, "hold", scaleDownTimeout, "1 (queue 0)", func(r int32) bool { return r == 1 })
	waitReplicas(t, ns, "five", scaleDownTimeout, "3 (queue 30)", func(r int32) bool { return r == 3 })
	waitReplicas(t, ns, "act", scaleDownTimeout, "at most 1 (queue 0)", func(r int32) bool { return r <= 1 })
	for _, name := range []string{"hold", "five"} {
		waitAutoscalerReason(t, ns, name, evaluation.ConditionFallback, corev1.ConditionFalse, "MetricsAvailable")
		waitAutoscalerEvent(t, ns, name, "FallbackCleared")
	}
}

// TestFallbackVanishedSeries: the exporter stops publishing the queue's
// series while Prometheus and the adapter keep answering. Prometheus marks
// the series stale at the next scrape, the adapter's answer is empty, the
// metric is failed (not 0: no scale-down), and after fallback.after the
// AtLeast policy raises the worker from 2 to 4. The series back, the normal
// algorithm resumes.
func TestFallbackVanishedSeries(t *testing.T) {
	client := startQueueAutoscaler(t)
	ns := newNamespace(t, "e2e-vanish-")
	q := setQueue(t, ns, 20)
	createDeployment(t, ns, "worker")
	a := queueAutoscaler("worker", q, 1, 8, nil)
	a.Spec.Fallback = &v1alpha1.FallbackSpec{Policy: v1alpha1.FallbackAtLeast, Replicas: ptr.To[int32](4),
		After: &metav1.Duration{Duration: fallbackAfter}, MaxAge: &metav1.Duration{Duration: time.Minute}}
	createQueueAutoscaler(t, client, ns, a)
	waitReplicas(t, ns, "worker", scaleUpTimeout, "2", func(r int32) bool { return r == 2 })

	gone := time.Now()
	exp().Delete(QueueGauge, map[string]string{"queue": q.name})
	waitAutoscalerReason(t, ns, "worker", evaluation.ConditionFallback, corev1.ConditionTrue, "FallbackAtLeast")
	if el := time.Since(gone); el < fallbackAfter {
		t.Errorf("Fallback=True %v after the series vanished, before fallback.after %v", el, fallbackAfter)
	}
	waitReplicas(t, ns, "worker", conditionTimeout, "4 (at least 4)", func(r int32) bool { return r == 4 })
	waitAutoscalerEvent(t, ns, "worker", "FallbackActivated")

	q.set(10) // ceil(10/10) = 1
	waitReplicas(t, ns, "worker", scaleDownTimeout, "1 (series back)", func(r int32) bool { return r == 1 })
	waitAutoscalerEvent(t, ns, "worker", "FallbackCleared")
}
