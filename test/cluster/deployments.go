package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// WaitDeploymentReady waits until every replica of the Deployment is
// updated, available and Ready, and returns it. On timeout the error carries
// its status and why its pods are not Ready (phase, conditions, waiting
// containers).
func WaitDeploymentReady(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration) (*appsv1.Deployment, error) {
	var d *appsv1.Deployment
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		d = got
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.ReadyReplicas == want &&
			s.AvailableReplicas == want && s.Replicas == want, nil
	})
	if err == nil {
		return d, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Deployment %s/%s not Ready within %v: %v", ns, name, timeout, err)
	if d == nil {
		return nil, fmt.Errorf("%s", b.String())
	}
	fmt.Fprintf(&b, "\nstatus: %+v", d.Status)
	if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		pods, _ := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "\npod %s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			for _, c := range p.Status.Conditions {
				if c.Status != corev1.ConditionTrue {
					fmt.Fprintf(&b, "; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
				}
			}
			for _, c := range p.Status.ContainerStatuses {
				if w := c.State.Waiting; w != nil {
					fmt.Fprintf(&b, "; container %s waiting: %s %s", c.Name, w.Reason, w.Message)
				}
			}
		}
	}
	describeNodes(&b, cs)
	return d, fmt.Errorf("%s", b.String())
}

// describeNodes adds each Node's taints and the conditions that keep pods
// off it (DiskPressure, MemoryPressure, PIDPressure true; Ready not true),
// so that "1 node(s) had untolerated taint(s)" comes with its cause.
func describeNodes(b *strings.Builder, cs kubernetes.Interface) {
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, n := range nodes.Items {
		fmt.Fprintf(b, "\nnode %s:", n.Name)
		for _, t := range n.Spec.Taints {
			fmt.Fprintf(b, " taint %s=%s:%s;", t.Key, t.Value, t.Effect)
		}
		for _, c := range n.Status.Conditions {
			if (c.Type == corev1.NodeReady) != (c.Status == corev1.ConditionTrue) {
				fmt.Fprintf(b, " %s=%s %s %s;", c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
}

// WaitReplicas reads the Deployment's spec.replicas (what an HPA or an
// Autoscaler last set) every second until cond holds, and returns that
// count. After timeout, or when ctx ends, it returns the last count read
// and an error.
func WaitReplicas(ctx context.Context, cs kubernetes.Interface, ns, name string, timeout time.Duration, cond func(int32) bool) (int32, error) {
	var last int32
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = ptr.Deref(d.Spec.Replicas, 1)
		return cond(last), nil
	})
	if err != nil {
		return last, fmt.Errorf("deployment %s/%s: %d replicas after %v: %w", ns, name, last, timeout, err)
	}
	return last, nil
}
