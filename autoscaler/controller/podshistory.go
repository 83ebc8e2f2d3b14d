package controller

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ebbflow/ebbflow/autoscaler/metrics"
)

// Generated parts of pod names (k8s.io/apimachinery/pkg/util/rand's
// alphabet): a ReplicaSet's pod-template hash and a pod's random suffix.
var (
	templateHashRE = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{1,10}$`)
	randomSuffixRE = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	ordinalRE      = regexp.MustCompile(`^(0|[1-9][0-9]{0,9})$`)
)

// errNoWorkload is why a Pods metric's history cannot be asked for the
// scale target's pods.
var errNoWorkload = errors.New("a Pods metric's history sums the pods of the scale target by the names their controller gives them " +
	"(a Deployment's NAME-<hash>-<suffix>, a StatefulSet's NAME-<ordinal>, a ReplicaSet's NAME-<suffix>; docs/forecast.md#history-contract)")

// workloadOf names the pods of the scale target ref whatever their names
// today, for a Pods metric's history: from the controllers of today's pods
// (a StatefulSet named like ref; a ReplicaSet named like ref; a ReplicaSet
// named ref's name, a dash and a pod-template hash, as a Deployment or any
// workload naming its ReplicaSets alike), every pod agreeing and named as
// its controller names pods (a name cut short to fit, or a pod of another
// workload, is an error: the history would miss or add pods). Without
// pods, ref's kind decides (apps Deployment, StatefulSet or ReplicaSet).
func workloadOf(ref autoscalingv2.CrossVersionObjectReference, pods []*corev1.Pod) (metrics.WorkloadPods, error) {
	// In name order: the error, shown in a condition, does not change with
	// the cache's order.
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var w metrics.WorkloadPods
	for _, p := range pods {
		pw, err := podWorkload(ref.Name, p)
		if err != nil {
			return metrics.WorkloadPods{}, err
		}
		if w.Key != "" && pw != w {
			return metrics.WorkloadPods{}, fmt.Errorf("the scale target's pods are of different workloads (%s=%s, %s=%s)", w.Key, w.Name, pw.Key, pw.Name)
		}
		w = pw
	}
	if w.Key != "" {
		return w, nil
	}
	gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
	switch {
	case gk.Group != "apps":
	case gk.Kind == "Deployment":
		return metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: ref.Name}, nil
	case gk.Kind == "StatefulSet":
		return metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: ref.Name}, nil
	case gk.Kind == "ReplicaSet":
		return metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel, Name: ref.Name}, nil
	}
	return metrics.WorkloadPods{}, fmt.Errorf("%w: %s %s has no pods to tell how it names them", errNoWorkload, ref.Kind, ref.Name)
}

// podWorkload is the workload of one pod of the scale target named name.
func podWorkload(name string, p *corev1.Pod) (metrics.WorkloadPods, error) {
	owner := metav1.GetControllerOf(p)
	if owner == nil {
		return metrics.WorkloadPods{}, fmt.Errorf("%w: pod %s has no controller", errNoWorkload, p.Name)
	}
	gv, _ := schema.ParseGroupVersion(owner.APIVersion)
	var w metrics.WorkloadPods
	switch {
	case gv.Group != "apps":
	case owner.Kind == "StatefulSet" && owner.Name == name:
		if suffix, ok := strings.CutPrefix(p.Name, name+"-"); ok && ordinalRE.MatchString(suffix) {
			return metrics.WorkloadPods{Key: metrics.HistoryStatefulSetPodsLabel, Name: name}, nil
		}
	case owner.Kind == "ReplicaSet" && owner.Name == name:
		w = metrics.WorkloadPods{Key: metrics.HistoryReplicaSetPodsLabel, Name: name}
	case owner.Kind == "ReplicaSet" && strings.HasPrefix(owner.Name, name+"-") && templateHashRE.MatchString(owner.Name[len(name)+1:]):
		w = metrics.WorkloadPods{Key: metrics.HistoryDeploymentPodsLabel, Name: name}
	}
	if w.Key != "" {
		if suffix, ok := strings.CutPrefix(p.Name, owner.Name+"-"); ok && randomSuffixRE.MatchString(suffix) {
			return w, nil
		}
	}
	return metrics.WorkloadPods{}, fmt.Errorf("%w: pod %s of %s %s is not named so", errNoWorkload, p.Name, owner.Kind, owner.Name)
}

// workloadPods is workloadOf the autoscaler's scale target and the pods
// podSel selects today (none when nil).
func (c *Controller) workloadPods(obj *Object, podSel labels.Selector) (metrics.WorkloadPods, error) {
	var pods []*corev1.Pod
	if podSel != nil && c.podSource != nil {
		var err error
		if pods, err = c.podSource.list(obj.Namespace, podSel); err != nil {
			return metrics.WorkloadPods{}, fmt.Errorf("history not read: unable to list the pods: %w", err)
		}
	}
	return workloadOf(obj.Spec.HPA.ScaleTargetRef, pods)
}
