package replicas

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults of kube-controller-manager's flags that shape pod readiness.
const (
	// DefaultCPUInitializationPeriod is
	// --horizontal-pod-autoscaler-cpu-initialization-period.
	DefaultCPUInitializationPeriod = 5 * time.Minute
	// DefaultInitialReadinessDelay is
	// --horizontal-pod-autoscaler-initial-readiness-delay.
	DefaultInitialReadinessDelay = 30 * time.Second
)

// Pod holds the facts about one pod that replica math reads.
type Pod struct {
	Name  string
	Phase corev1.PodPhase
	// Deleting is true when the pod has a deletionTimestamp.
	Deleting bool
	// Ready is the pod's first Ready condition, or nil when it has none.
	Ready *ReadyCondition
	// StartTime is status.startTime, or nil when unset.
	StartTime *time.Time
	// Containers are the regular containers, in spec order.
	Containers []Container
	// InitContainers are the init containers, in spec order.
	InitContainers []Container
	// PodRequests is spec.resources.requests (pod-level requests), if any.
	PodRequests corev1.ResourceList
	// Overhead is spec.overhead, if any.
	Overhead corev1.ResourceList
}

// ReadyCondition is the Ready condition of a pod.
type ReadyCondition struct {
	Status             corev1.ConditionStatus
	LastTransitionTime time.Time
}

// Container holds the requests of one container.
type Container struct {
	Name     string
	Requests corev1.ResourceList
	// RestartAlways marks a restartable init container (a sidecar).
	RestartAlways bool
}

// Sample is one pod's metric sample as the metrics APIs report it.
type Sample struct {
	// Value is in milli-units.
	Value     int64
	Timestamp time.Time
	// Window is the sampling window (resource metrics); zero otherwise.
	Window time.Duration
}

// Samples maps pod name to that pod's sample. It may hold pods that are not in
// the pod list; those count as upstream counts them.
type Samples map[string]Sample

// PodTiming holds the durations that decide whether a pod's cpu sample can be
// trusted, and the current time they are measured against.
type PodTiming struct {
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	Now                     time.Time
}

// PodFromCore extracts the facts replica math needs from a core/v1 Pod. It
// never retains p or any of its maps: the result shares nothing mutable with p.
func PodFromCore(p *corev1.Pod) Pod {
	out := Pod{
		Name:           p.Name,
		Phase:          p.Status.Phase,
		Deleting:       p.DeletionTimestamp != nil,
		Containers:     containersFromCore(p.Spec.Containers),
		InitContainers: containersFromCore(p.Spec.InitContainers),
		Overhead:       p.Spec.Overhead.DeepCopy(),
	}
	if p.Spec.Resources != nil {
		out.PodRequests = p.Spec.Resources.Requests.DeepCopy()
	}
	if p.Status.StartTime != nil {
		t := p.Status.StartTime.Time
		out.StartTime = &t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Ready = &ReadyCondition{Status: c.Status, LastTransitionTime: c.LastTransitionTime.Time}
			break
		}
	}
	return out
}

func containersFromCore(cs []corev1.Container) []Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]Container, 0, len(cs))
	for _, c := range cs {
		out = append(out, Container{
			Name:          c.Name,
			Requests:      c.Resources.Requests.DeepCopy(),
			RestartAlways: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways,
		})
	}
	return out
}

// readyAndRunning reports whether the pod counts toward the ready pod count
// used by Object and External Value targets: Running with Ready=True.
func (p Pod) readyAndRunning() bool {
	return p.Phase == corev1.PodRunning && p.Ready != nil && p.Ready.Status == corev1.ConditionTrue
}
