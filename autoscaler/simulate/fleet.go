package simulate

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// fleet is the simulated pods of the scale target, oldest first.
type fleet struct {
	pods    []replicas.Pod
	readyAt []time.Time
	startup time.Duration
	created int
}

// newFleet returns n pods that are ready at at.
func newFleet(n int32, at time.Time, startup time.Duration) *fleet {
	f := &fleet{startup: startup}
	f.add(n, at.Add(-startup))
	return f
}

func (f *fleet) replicas() int32 { return int32(len(f.pods)) }

// add creates n pods at now; each becomes ready startup later.
func (f *fleet) add(n int32, now time.Time) {
	for range n {
		f.created++
		start := now
		f.pods = append(f.pods, replicas.Pod{
			Name:      "pod-" + strconv.Itoa(f.created),
			Phase:     corev1.PodRunning,
			StartTime: &start,
			Ready:     &replicas.ReadyCondition{Status: corev1.ConditionFalse, LastTransitionTime: now},
		})
		f.readyAt = append(f.readyAt, now.Add(f.startup))
	}
}

// scale moves the fleet to n pods at now. Removal takes pods that are not
// ready first, newest first (as a ReplicaSet ranks pods to delete).
func (f *fleet) scale(n int32, now time.Time) {
	if n > f.replicas() {
		f.add(n-f.replicas(), now)
		return
	}
	for f.replicas() > n {
		victim := len(f.pods) - 1
		for i := len(f.pods) - 1; i >= 0; i-- {
			if now.Before(f.readyAt[i]) {
				victim = i
				break
			}
		}
		f.pods = append(f.pods[:victim], f.pods[victim+1:]...)
		f.readyAt = append(f.readyAt[:victim], f.readyAt[victim+1:]...)
	}
}

// observe brings the pods' Ready conditions to now and returns the number of
// ready pods. The pods slice stays owned by the fleet.
func (f *fleet) observe(now time.Time) int32 {
	var ready int32
	for i := range f.pods {
		if now.Before(f.readyAt[i]) {
			continue
		}
		ready++
		if c := f.pods[i].Ready; c.Status != corev1.ConditionTrue {
			f.pods[i].Ready = &replicas.ReadyCondition{Status: corev1.ConditionTrue, LastTransitionTime: f.readyAt[i]}
		}
	}
	return ready
}

// fill sets samples to one sample of value at now per ready pod.
func (f *fleet) fill(samples replicas.Samples, value int64, now time.Time) {
	clear(samples)
	for i, p := range f.pods {
		if !now.Before(f.readyAt[i]) {
			samples[p.Name] = replicas.Sample{Value: value, Timestamp: now}
		}
	}
}
