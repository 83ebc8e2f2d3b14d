package replicas

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Requests returns each pod's request of resource in milli-units, as upstream
// computes the denominator of utilization (PodLevelResources on, its v1.37
// default):
//
//   - container != "": that container's request, searched among containers and
//     restartable init containers; an error if the container or its request is
//     missing.
//   - container == "" and the pod sets pod-level requests for a supported
//     resource (cpu, memory, hugepages-*): the effective pod request (pod-level
//     values over the aggregated container requests, plus overhead); an error
//     if resource is absent from it.
//   - otherwise: the sum over containers and restartable init containers; an
//     error if any of them lacks a request for resource.
//
// The first error stops the computation; requests of every pod are needed,
// including pods that will be ignored.
func Requests(pods []Pod, resourceName corev1.ResourceName, container string) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, p := range pods {
		var (
			r   int64
			err error
		)
		if container == "" && hasPodLevelRequests(p) {
			r, err = podLevelRequest(p, resourceName)
		} else {
			r, err = containerRequest(p, resourceName, container)
		}
		if err != nil {
			return nil, err
		}
		out[p.Name] = r
	}
	return out, nil
}

func supportedPodLevel(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func hasPodLevelRequests(p Pod) bool {
	for name := range p.PodRequests {
		if supportedPodLevel(name) {
			return true
		}
	}
	return false
}

func containerRequest(p Pod, name corev1.ResourceName, container string) (int64, error) {
	cs := make([]Container, 0, len(p.Containers)+len(p.InitContainers))
	cs = append(cs, p.Containers...)
	for _, c := range p.InitContainers {
		if c.RestartAlways {
			cs = append(cs, c)
		}
	}
	var total int64
	for _, c := range cs {
		if container == "" || container == c.Name {
			q, ok := c.Requests[name]
			if !ok {
				return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", name, c.Name, p.Name)
			}
			total += q.MilliValue()
		}
		if container == c.Name {
			return total, nil
		}
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, p.Name)
	}
	return total, nil
}

// amount is one resource's quantity and whether any list named it.
type amount struct {
	q   resource.Quantity
	set bool
}

func (a *amount) add(l corev1.ResourceList, name corev1.ResourceName) {
	q, ok := l[name]
	if !ok {
		return
	}
	if !a.set {
		a.q, a.set = q.DeepCopy(), true
		return
	}
	a.q.Add(q)
}

func (a *amount) max(b amount) {
	if b.set && (!a.set || b.q.Cmp(a.q) > 0) {
		a.q, a.set = b.q.DeepCopy(), true
	}
}

// podLevelRequest is the effective request of one resource for a pod that
// sets pod-level requests: containers aggregated with the sidecar-aware init
// container rule, replaced by the pod-level value when the pod sets one, plus
// overhead.
func podLevelRequest(p Pod, name corev1.ResourceName) (int64, error) {
	total := aggregateContainers(p, name)
	if q, ok := p.PodRequests[name]; ok && supportedPodLevel(name) {
		total = amount{q: q.DeepCopy(), set: true}
	}
	total.add(p.Overhead, name)
	if !total.set {
		return 0, fmt.Errorf("missing pod-level request for %s in Pod %s", name, p.Name)
	}
	return total.q.MilliValue(), nil
}

// aggregateContainers sums regular and restartable init containers, then takes
// the maximum with the peak of any init container's start-up (its own request
// plus the sidecars started before it).
func aggregateContainers(p Pod, name corev1.ResourceName) amount {
	var sum, sidecars, initPeak amount
	for _, c := range p.Containers {
		sum.add(c.Requests, name)
	}
	for _, c := range p.InitContainers {
		var during amount
		if c.RestartAlways {
			sum.add(c.Requests, name)
			sidecars.add(c.Requests, name)
			during = sidecars
			during.q = sidecars.q.DeepCopy()
		} else {
			during.add(c.Requests, name)
			if sidecars.set {
				during.add(corev1.ResourceList{name: sidecars.q}, name)
			}
		}
		initPeak.max(during)
	}
	sum.max(initPeak)
	return sum
}
