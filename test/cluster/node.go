package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ebbflow/ebbflow/test/proc"
)

// The real node (Options.RealNode) is a kubelet with containerd, runc and the
// CNI bridge, next to kwok's fake nodes, with kube-scheduler and kube-proxy.
// Before anything starts, the run takes the machine's real-node lock, sweeps
// what a killed earlier run left, and installs the guard that keeps every
// packet of the pod and Service networks on the machine (node_net.go).
// kube-apiserver then listens on the bridge's address, where pods reach it
// through the kubernetes Service.

// prepareRealNode takes the lock and starts the run's watchdog, sweeps what
// an earlier run left, refuses to run beside another kube-proxy's rules,
// records what the run will change, and installs the guard and the bridge.
// It runs before etcd.
func (c *Cluster) prepareRealNode(ctx context.Context) error {
	lock := c.opts.nodeLock
	if lock == nil {
		var err error
		if lock, err = acquireNodeLock(ctx, c.logf); err != nil {
			return err
		}
		c.ownsNodeLock = true
	}
	c.nodeLock = lock
	wd, err := startWatchdog(lock)
	if err != nil {
		return err
	}
	c.watchdog = wd
	if stale, ok := readNodeOwner(); ok {
		c.logf("sweeping what the real node of an earlier run left (%s)", stale.root)
		if err := sweepDeadRun(ctx, stale, c.logf); err != nil {
			return fmt.Errorf("sweep an earlier run: %w", err)
		}
		_ = os.Remove(nodeOwnerFile)
	}
	// Anything of ours that outlived its record (a crash between steps).
	if err := removeGuard(ctx); err != nil {
		return err
	}
	if err := refuseForeignProxyRules(ctx); err != nil {
		return err
	}
	if err := checkNodeDisk(c.dir); err != nil {
		return err
	}
	ps, err := proc.FreePorts(3 + 2*(1+c.opts.ExtraRealNodes))
	if err != nil {
		return err
	}
	c.nodePorts = nodePorts{scheduler: ps[0], proxyHealthz: ps[1], proxyMetrics: ps[2]}
	c.nodes = planNodes(c.dir, c.opts.ExtraRealNodes, ps[3:])
	root := c.nodes[0].paths.root
	// What an earlier cluster in the same Dir left, now unmounted.
	if err := os.RemoveAll(root); err != nil {
		return fmt.Errorf("clean %s: %w", root, err)
	}
	if c.nodeOwner, err = recordNodeOwner(root, c.dir, c.ownsDir); err != nil {
		return err
	}
	for _, n := range c.nodes {
		for _, h := range cgroupHierarchies() {
			if err := os.MkdirAll(filepath.Join(h, n.cgroup), 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", n.cgroup, err)
			}
		}
	}
	return installGuard(ctx)
}

// startRealNode starts containerd, imports the pause image, and starts the
// kubelet, kube-scheduler and kube-proxy; it returns once the Node is Ready
// and a pod can reach kube-apiserver through the kubernetes Service.
func (c *Cluster) startRealNode(ctx context.Context) error {
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ebbflow:" + kubeletAPIClient},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: kubeletAPIClient}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("bind kube-apiserver's kubelet client: %w", err)
	}
	for _, n := range c.nodes {
		if err := c.startContainerd(ctx, n); err != nil {
			return err
		}
	}
	if _, err := c.ImportImage(ctx, c.opts.PauseImageTarball); err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	if err := c.startScheduler(ctx); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := c.startKubelet(ctx, n); err != nil {
			return err
		}
	}
	// kube-proxy after the kubelet: it reads this node's IPs from the Node the
	// kubelet registers, and exits when they change after it started.
	if err := c.startKubeProxy(ctx); err != nil {
		return err
	}
	return c.waitDefaultServiceAccount(ctx)
}

// waitDefaultServiceAccount waits until kube-controller-manager has created
// the default ServiceAccount (WaitDefaultServiceAccount) and the root CA
// ConfigMap of the default namespace, without which no pod with a token is
// admitted or started; both within controllerMgrTimeout.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, controllerMgrTimeout)
	defer cancel()
	if err := WaitDefaultServiceAccount(ctx, c.client, "default"); err != nil {
		return err
	}
	return waitFor(ctx, "kube-root-ca.crt", controllerMgrTimeout, nil, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, err
	})
}

// stopRealNode deletes every pod (the kubelet stops their containers and
// releases their network), stops the node's processes, sweeps, removes the
// owner record, stops the watchdog and frees the lock (unless the caller
// passed it in Options). Stop calls it after the clients of kube-apiserver
// stopped and before kube-apiserver.
func (c *Cluster) stopRealNode(procs map[string]*process) error {
	if c.nodeLock == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var errs []error
	nodes := c.nodes
	for _, n := range nodes {
		if p := procs[n.proc(Kubelet)]; p != nil && !p.Exited() {
			errs = append(errs, c.drainRealNode(ctx, n))
		}
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.proc(Kubelet))
	}
	names = append(names, KubeProxy, KubeScheduler)
	for _, n := range nodes {
		names = append(names, n.proc(Containerd))
	}
	for _, name := range names {
		if p := procs[name]; p != nil {
			p.Stop(stopGrace)
			delete(procs, name)
		}
	}
	if c.dns != nil {
		c.dns.stop()
		c.dns = nil
	}
	if c.nodeOwner.root != "" { // recorded: the run changed the machine
		sweepErr := sweepNode(ctx, c.nodeOwner, c.logf)
		if sweepErr == nil {
			_ = os.Remove(nodeOwnerFile)
		}
		errs = append(errs, sweepErr)
	}
	if c.watchdog != nil {
		c.watchdog.stop()
		c.watchdog = nil
	}
	if c.ownsNodeLock {
		c.nodeLock.unlock()
	}
	c.nodeLock = nil
	return errors.Join(errs...)
}

// drainRealNode deletes the pods of real node n at once and waits until its
// kubelet has removed them.
func (c *Cluster) drainRealNode(ctx context.Context, n realNode) error {
	pods := c.client.CoreV1().Pods(metav1.NamespaceAll)
	sel := metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name}
	list, err := pods.List(ctx, sel)
	if err != nil {
		return fmt.Errorf("list pods of real node %s: %w", n.name, err)
	}
	zero := int64(0)
	for _, p := range list.Items {
		_ = c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := n.ctr(ctx, "tasks", "ls", "-q")
		return err == nil && out == "", nil
	})
	if err != nil {
		return fmt.Errorf("containers of real node %s still running after its pods were deleted: %w", n.name, err)
	}
	return nil
}
