//go:build reaction

package e2e

// The reaction-time harness (build tag "reaction", run by `make
// bench-reaction`; not part of `make test`): how long from a message arriving
// on an empty queue to the first /scale write from zero. See
// docs/benchmarks.md.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/ebbflow/ebbflow/autoscaler/apis/autoscaling/v1alpha1"
)

// reactionWorkers is how many queue workers take trials concurrently.
const reactionWorkers = 4

// reactionTrials is the number of trials: EBBFLOW_REACTION_TRIALS, default 20.
func reactionTrials(t *testing.T) int {
	n := 20
	if v := os.Getenv("EBBFLOW_REACTION_TRIALS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1000 {
			t.Fatalf("EBBFLOW_REACTION_TRIALS=%q: want an integer in [1, 1000]", v)
		}
	}
	return n
}

// TestReactionFromZero measures, over reactionTrials trials spread over
// reactionWorkers workers, the time from setting the queue gauge from 0 to
// 50 on the exporter (above activation 0) to the Deployment's watch event
// showing spec.replicas above 0 (the autoscaler's /scale write). Between
// trials the queue goes back to 0, the worker back to zero replicas
// (scaleToZero.after 1s, scale-down 100%), and a random pause of up to one
// sync period decorrelates the next arrival from the sync ticks.
func TestReactionFromZero(t *testing.T) {
	client := startQueueAutoscaler(t)
	trials := reactionTrials(t)
	ns := newNamespace(t, "e2e-reaction-")
	w, err := env().Client().AppsV1().Deployments(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch deployments: %v", err)
	}
	defer w.Stop()
	wakes := newWakeWatch(w)

	var mu sync.Mutex
	var samples []time.Duration
	var wg sync.WaitGroup
	for i := range reactionWorkers {
		name := fmt.Sprintf("w%d", i)
		q := setQueue(t, ns+"-"+name, 0)
		createDeployment(t, ns, name)
		a := queueAutoscaler(name, q, 0, 2, ptr.To(resource.MustParse("0")))
		a.Spec.ScaleToZero = &v1alpha1.ScaleToZeroSpec{After: &metav1.Duration{Duration: time.Second}}
		a.Spec.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 1}}
		createQueueAutoscaler(t, client, ns, a)
		n := trials / reactionWorkers
		if i < trials%reactionWorkers {
			n++
		}
		wg.Go(func() {
			for range n {
				if err := pollZero(ns, name, 2*time.Minute); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(rand.N(5 * time.Second))
				wake := wakes.arm(name)
				start := time.Now()
				q.set(50)
				select {
				case at := <-wake:
					mu.Lock()
					samples = append(samples, at.Sub(start))
					mu.Unlock()
				case <-time.After(time.Minute):
					t.Errorf("%s: no scale from zero within a minute", name)
					return
				}
				q.set(0)
			}
		})
	}
	wg.Wait()
	if len(samples) < trials {
		t.Fatalf("%d of %d trials measured", len(samples), trials)
	}
	slices.Sort(samples)
	t.Logf("reaction time from zero over %d trials: p50 %v p99 %v min %v max %v",
		len(samples), quantile(samples, 0.50), quantile(samples, 0.99), samples[0], samples[len(samples)-1])
	t.Logf("samples: %v", samples)
}

// pollZero waits until the Deployment has 0 replicas (callable from any
// goroutine: it never fails the test itself).
func pollZero(ns, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		r, err := deploymentReplicas(ctx, ns, name)
		return err == nil && r == 0, nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s: not at 0 replicas within %v", ns, name, timeout)
	}
	return nil
}

// wakeWatch reports, per Deployment, the time a watch event first shows
// spec.replicas above 0 after the Deployment was at 0.
type wakeWatch struct {
	mu    sync.Mutex
	armed map[string]chan time.Time
}

func newWakeWatch(w watch.Interface) *wakeWatch {
	ww := &wakeWatch{armed: map[string]chan time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			at := time.Now()
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || ptr.Deref(d.Spec.Replicas, 1) == 0 {
				continue
			}
			ww.mu.Lock()
			if ch, ok := ww.armed[d.Name]; ok {
				ch <- at
				delete(ww.armed, d.Name)
			}
			ww.mu.Unlock()
		}
	}()
	return ww
}

// arm returns a channel that receives the time of the next event showing
// name above 0 replicas.
func (ww *wakeWatch) arm(name string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ww.mu.Lock()
	ww.armed[name] = ch
	ww.mu.Unlock()
	return ch
}
