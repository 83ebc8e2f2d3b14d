package cluster

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitDefaultServiceAccount waits, every 100 ms until ctx ends, for the
// default ServiceAccount of ns, which kube-controller-manager creates after
// the namespace: the ServiceAccount admission plugin refuses pods until then.
// The error carries the last read's.
func WaitDefaultServiceAccount(ctx context.Context, client kubernetes.Interface, ns string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, last = client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("default service account of %s: %w (last error: %v)", ns, err, last)
	}
	return nil
}
