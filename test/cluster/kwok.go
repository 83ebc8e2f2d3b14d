package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fake node settings.
const (
	// KwokNodeAnnotation marks the Nodes kwok manages.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	nodeReadyTimeout   = 60 * time.Second
)

// NodeName returns the name of the i-th fake Node (0-based).
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// NodeNames returns the names of the cluster's fake Nodes.
func (c *Cluster) NodeNames() []string {
	names := make([]string, c.opts.Nodes)
	for i := range names {
		names[i] = NodeName(i)
	}
	return names
}

// startKwok starts kwok for the annotated Nodes, creates them and waits until
// every one is Ready.
func (c *Cluster) startKwok(ctx context.Context) error {
	p, err := c.launch(Kwok, c.tools.kwok, []string{
		"--kubeconfig=" + c.adminKubeconfig,
		"--config=" + c.tools.kwokStages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--node-ip=127.0.0.1",
	})
	if err != nil {
		return err
	}
	for _, name := range c.NodeNames() {
		n := fakeNode(name)
		if c.opts.RealNode {
			// Pods without a nodeName belong on the real node.
			n.Spec.Taints = []corev1.Taint{{Key: KwokNodeAnnotation, Value: "fake", Effect: corev1.TaintEffectNoSchedule}}
		}
		if _, err := c.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", name, err)
		}
	}
	return waitFor(ctx, "fake nodes Ready", nodeReadyTimeout, p, func(ctx context.Context) (bool, error) {
		for _, name := range c.NodeNames() {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeReady(n) {
				return false, fmt.Errorf("node %s not Ready", name)
			}
		}
		return true, nil
	})
}

// fakeNode returns a kwok-managed Node with room for many pods.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"type":                   "kwok",
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity.DeepCopy()},
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
