package simulate

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ebbflow/ebbflow/autoscaler/replicas"
)

// fleet is the simulated pods of the scale target, oldest first.
type fleet struct {
	// template holds what every pod requests (nil: nothing known).
	template *replicas.Pod
	pods     []replicas.Pod
	readyAt  []time.Time
	startup  time.Duration
	created  int
}

// initialAge is how long before the replay the initial pods were created:
// long enough that no cpu initialization period or readiness window of the
// controller still applies to them, as to pods that have been serving.
const initialAge = 24 * time.Hour

// newFleet returns n pods, requesting what template says, that have been
// ready long before at.
func newFleet(n int32, at time.Time, startup time.Duration, template *replicas.Pod) *fleet {
	f := &fleet{startup: startup, template: template}
	f.add(n, at.Add(-initialAge-startup))
	return f
}

func (f *fleet) replicas() int32 { return int32(len(f.pods)) }

// add creates n pods at now; each becomes ready startup later.
func (f *fleet) add(n int32, now time.Time) {
	for range n {
		f.created++
		start := now
		var p replicas.Pod
		if f.template != nil {
			// The request lists are shared read-only by every pod.
			p = replicas.Pod{Containers: f.template.Containers, InitContainers: f.template.InitContainers,
				PodRequests: f.template.PodRequests, Overhead: f.template.Overhead}
		}
		p.Name = "pod-" + strconv.Itoa(f.created)
		p.Phase = corev1.PodRunning
		p.StartTime = &start
		p.Ready = &replicas.ReadyCondition{Status: corev1.ConditionFalse, LastTransitionTime: now}
		f.pods = append(f.pods, p)
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

// fill sets samples to sample for every pod ready at sample.Timestamp.
func (f *fleet) fill(samples replicas.Samples, sample replicas.Sample) {
	clear(samples)
	for i, p := range f.pods {
		if !sample.Timestamp.Before(f.readyAt[i]) {
			samples[p.Name] = sample
		}
	}
}
