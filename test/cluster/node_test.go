package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestRealNode runs real pods as a user's cluster does: a queue and a worker
// of the sample application, under the restricted Pod Security Standard,
// scheduled by kube-scheduler onto two real nodes (the first and an extra
// one, Options.ExtraRealNodes), the worker on the other node from the queue,
// talking through a Service (kube-proxy) from a pod, reached from the host
// through the same Service, with the kubelets' resource metrics read through
// kube-apiserver. After Stop nothing of either node is left on the machine
// and every kernel setting has its value of before. The test holds the real-node lock from before the start
// to after those checks, so another run (another package, another engineer)
// cannot hold state of its own on the machine meanwhile.
func TestRealNode(t *testing.T) {
	lock := holdNodeLock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kernelBefore := sysctlSnapshot(t)
	c, err := Start(ctx, Options{RealNode: true, ExtraRealNodes: 1, NoAdapter: true, Nodes: 1, Log: testLog{t}, nodeLock: lock})
	if err != nil {
		t.Fatal(err)
	}
	root := c.nodes[0].paths.root
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop()
		}
	})
	tars, err := BuildImages(ctx, t.TempDir(), "ebbflow-sampleapp")
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.ImportImage(ctx, tars[0])
	if err != nil {
		t.Fatal(err)
	}
	image := names[0]

	cs := c.Client()
	const ns = "smoke"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The restricted standard is enforced: a root pod is refused.
	root0 := restrictedDeployment("root", image, "--mode=serve")
	root0.Spec.Template.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, root0, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	queueSvc := createService(ctx, t, cs, ns, "queue")
	queueURL := "http://" + queueSvc + ":80"
	second := extraRealNodeName(1)
	for _, d := range []*appsv1.Deployment{
		onNode(restrictedDeployment("queue", image, "--mode=queue"), RealNodeName),
		onNode(restrictedDeployment("worker", image, "--mode=worker", "--queue-url="+queueURL, "--cpu-per-message=1ms"), second),
	} {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"queue", "worker"} {
		waitDeploymentReady(ctx, t, cs, ns, name)
	}
	// While the pods run, the machine's kernel settings are those of
	// before but the pod network's forwarding (nodeKernelSettings): the
	// kubelet's kernel.panic, vm.overcommit_memory and the rest it checks
	// are read in its own view, never written.
	assertSysctlsAsBefore(t, "while the pods run", withoutNodeSettings(kernelBefore), withoutNodeSettings(sysctlSnapshot(t)))
	rs, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=root"})
	if err != nil || len(rs.Items) != 1 {
		t.Fatalf("replica set of the root deployment: %v %v", rs, err)
	}
	if n := rs.Items[0].Status.Replicas; n != 0 {
		t.Errorf("a pod running as root was admitted into a restricted namespace (%d replicas)", n)
	}

	// Host → Service (kube-proxy's nat OUTPUT) → the queue pod; the worker
	// pod drains it through the same Service from the pod network.
	// kube-proxy has the Service's endpoints a moment after the pod is Ready.
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Post(queueURL+"/enqueue?n=50", "text/plain", nil)
		if err != nil {
			lastErr = err
			return false, nil
		}
		resp.Body.Close()
		lastErr = fmt.Errorf("enqueue: %s", resp.Status)
		return resp.StatusCode/100 == 2, nil
	})
	if err != nil {
		t.Fatalf("enqueue through the Service from the host: %v", lastErr)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err := httpGet(ctx, queueURL+"/metrics")
		return err == nil && strings.Contains(body, "\nqueue_messages_ready 0\n") && strings.Contains(body, "dequeued"), nil
	})
	if err != nil {
		t.Fatalf("the worker pod did not drain the queue through the Service: %v", err)
	}

	assertPodsOnTheirNodes(ctx, t, cs, ns, map[string]string{"queue": RealNodeName, "worker": second})

	// Each kubelet's resource metrics, read as kube-apiserver reads them:
	// each has its own pod's, not the other's.
	for node, pod := range map[string][2]string{RealNodeName: {"queue", "worker"}, second: {"worker", "queue"}} {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/metrics/resource").DoRaw(ctx)
		if err != nil {
			t.Fatalf("kubelet /metrics/resource of %s through kube-apiserver: %v", node, err)
		}
		metric := func(container string) string {
			return `container_cpu_usage_seconds_total{container="` + container + `",namespace="smoke"`
		}
		if !strings.Contains(string(raw), metric(pod[0])) {
			t.Errorf("kubelet /metrics/resource of %s lacks %s:\n%.2000s", node, metric(pod[0]), raw)
		}
		if strings.Contains(string(raw), metric(pod[1])) {
			t.Errorf("kubelet /metrics/resource of %s has %s, a container of the other node", node, metric(pod[1]))
		}
	}

	assertPullsGoToTheGuard(ctx, t, cs, ns)

	stopped = true
	if err := c.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	assertNodeLeftNothing(t, root)
	assertSysctlsUnchanged(t, kernelBefore, sysctlSnapshot(t))
	// The pods' logs were below the node root, not in the machine's
	// /var/log/pods, where a killed kubelet leaves them.
	if m, _ := filepath.Glob("/var/log/pods/" + ns + "_*"); len(m) > 0 {
		t.Errorf("pod logs of the run in /var/log/pods: %v", m)
	}
}

// holdNodeLock takes the real-node lock for the test (lockCleanMachine)
// and frees it at cleanup, leaving any owner record: should a run under
// test have failed to sweep, its record is what lets the next run or make
// clean-node do it.
func holdNodeLock(t *testing.T) *nodeLock {
	t.Helper()
	lock := lockCleanMachine(t)
	t.Cleanup(lock.unlock)
	return lock
}

// lockCleanMachine takes the real-node lock, waiting up to nodeLockWait for
// other runs (another test package holds it for its whole run) apart from
// the test's own time bounds, and sweeps what a dead run left as a run's
// start would, so the test begins on the machine as it was before any run.
func lockCleanMachine(t *testing.T) *nodeLock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeLockWait)
	defer cancel()
	lock, err := waitNodeLockBlocking(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := readNodeOwner(); ok {
		t.Logf("sweeping what a dead run left (%s) before the test", o.root)
		if err := sweepDeadRun(ctx, o, t.Logf); err != nil {
			lock.unlock()
			t.Fatalf("sweep a dead run's leftovers: %v", err)
		}
		_ = os.Remove(nodeOwnerFile)
	}
	return lock
}

// nodeLockWait bounds a test's wait for the real-node lock.
const nodeLockWait = 30 * time.Minute

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// assertPullsGoToTheGuard: a pod whose image must be pulled gets the pull
// error of RegistryGuard's refused proxy, not one from a registry.
func assertPullsGoToTheGuard(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	d := restrictedDeployment("pull", "registry.ebbflow.invalid/never/pulled:1")
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=pull"})
		if err != nil || len(pods.Items) == 0 || len(pods.Items[0].Status.ContainerStatuses) == 0 {
			return false, nil
		}
		if w := pods.Items[0].Status.ContainerStatuses[0].State.Waiting; w != nil && w.Message != "" {
			last = w.Reason + ": " + w.Message
		}
		return strings.Contains(last, "proxyconnect tcp: dial tcp "+RegistryGuard), nil
	})
	if err != nil {
		t.Fatalf("a pull did not go to the registry guard %s; last waiting state: %q", RegistryGuard, last)
	}
	t.Logf("pull refused by the guard: %s", last)
}

// onNode pins d's pods to the Node named node.
func onNode(d *appsv1.Deployment, node string) *appsv1.Deployment {
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	return d
}

// assertPodsOnTheirNodes checks that the pods of each app run on their node,
// whose capacity is the machine's CPUs.
func assertPodsOnTheirNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, want map[string]string) {
	t.Helper()
	for app, node := range want {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("pods of %s: %d, %v; want one", app, len(pods.Items), err)
		}
		if got := pods.Items[0].Spec.NodeName; got != node || !RealNodePod(&pods.Items[0]) {
			t.Errorf("pod of %s on node %q, want the real node %s", app, got, node)
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := n.Status.Capacity.Cpu().Value(), int64(runtime.NumCPU()); got != want {
			t.Errorf("node %s has %d CPUs of capacity, want the machine's %d", node, got, want)
		}
	}
}

// restrictedDeployment is a one-replica Deployment of the sample application
// that passes the restricted Pod Security Standard.
func restrictedDeployment(name, image string, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name: name, Image: image, ImagePullPolicy: corev1.PullNever,
						Args:  append(args, "--shutdown-delay=0s"),
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http")}},
							PeriodSeconds: 1,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// createService creates a ClusterIP Service on port 80 for app name and
// returns its ClusterIP.
func createService(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

func waitDeploymentReady(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if _, err := WaitDeploymentReady(ctx, cs, ns, name, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

// assertNodeLeftNothing checks the machine after a real node stopped: no
// process, mount, cgroup, network namespace, iptables chain, bridge or CNI
// cache entry of it is left, no owner record and no watchdog. The caller
// holds the real-node lock, so no other run's state is on the machine.
func assertNodeLeftNothing(t *testing.T, root string) {
	t.Helper()
	ctx := context.Background()
	assertNoGuardLeft(t)
	if out, _ := run(ctx, "ip", "link", "show", nodeBridge); strings.Contains(out, nodeBridge+":") {
		t.Errorf("bridge %s left", nodeBridge)
	}
	for _, bin := range []string{"iptables-save", "ip6tables-save"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := run(ctx, bin, "-t", table)
			if err != nil {
				t.Errorf("%s: %v", bin, err)
			}
			for line := range strings.Lines(out) {
				if strings.HasPrefix(line, ":KUBE-") || strings.HasPrefix(line, ":EBBFLOW-") || strings.HasPrefix(line, ":CNI-") {
					t.Errorf("%s %s chain left: %s", bin, table, strings.TrimSpace(line))
				}
			}
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(mounts), root) {
		t.Errorf("mounts under %s left", root)
	}
	if dirs := cgroupDirs(nodeCgroup); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), root+"/") {
			t.Errorf("process %s left: %s", e.Name(), strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(cniCacheDir, cniNetworkName+"-*")); len(m) > 0 {
		t.Errorf("CNI cache entries left: %v", m)
	}
	links, _ := os.ReadDir(containerLogLinks)
	for _, l := range links {
		if target, err := os.Readlink(filepath.Join(containerLogLinks, l.Name())); err == nil && strings.HasPrefix(target, root+"/") {
			t.Errorf("link to a pod's log left: %s -> %s", filepath.Join(containerLogLinks, l.Name()), target)
		}
	}
	if target, err := os.Readlink(cadvisorSocket); err == nil && strings.HasPrefix(target, root+"/") {
		t.Errorf("%s still links to the run's containerd", cadvisorSocket)
	}
	if o, ok := readNodeOwner(); ok {
		t.Errorf("the real-node owner record is left (%s)", o.root)
	}
	if pids := watchdogProcesses(); len(pids) > 0 {
		t.Errorf("watchdog processes left: %v", pids)
	}
}

// watchdogProcesses returns the processes started as a real node's watchdog.
func watchdogProcesses() []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains("\x00"+string(env)+"\x00", "\x00"+watchdogEnv+"=1\x00") && alive(atoi(e.Name())) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestRealNodeSweepsAKilledRun: a run killed with SIGKILL together with its
// watchdog leaves its node's containers, shims, mounts, cgroups, rules,
// bridge and kernel settings behind; the next run removes all of it before it
// starts, runs its own pods, and leaves nothing. The test holds the lock
// throughout, as the killed run's successor would.
func TestRealNodeSweepsAKilledRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	tars, err := BuildImages(ctx, t.TempDir(), "ebbflow-sampleapp")
	if err != nil {
		t.Fatal(err)
	}
	runPod := func(c *Cluster, ns string) {
		t.Helper()
		names, err := c.ImportImage(ctx, tars[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Client().AppsV1().Deployments(ns).Create(ctx, restrictedDeployment("app", names[0], "--mode=serve"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDeploymentReady(ctx, t, c.Client(), ns, "app")
	}
	lock := holdNodeLock(t)
	kernelBefore := sysctlSnapshot(t)

	// The first run, "killed": its node processes and its watchdog get
	// SIGKILL, leaving its owner record; containers and shims live on.
	first, err := Start(ctx, Options{RealNode: true, NoAdapter: true, NoFakeNodes: true, Dir: t.TempDir(), Log: testLog{t}, nodeLock: lock})
	if err != nil {
		t.Fatal(err)
	}
	firstRoot := first.nodes[0].paths.root
	runPod(first, "first")
	first.mu.Lock()
	for _, name := range []string{Kubelet, KubeProxy, KubeScheduler, Containerd} {
		if p := first.procs[name]; p != nil {
			p.Kill()
			<-p.Done()
			delete(first.procs, name)
		}
	}
	first.mu.Unlock()
	first.watchdog.kill()
	first.watchdog, first.nodeLock = nil, nil
	if out, err := run(ctx, "iptables-save", "-t", "nat"); err != nil || !strings.Contains(out, ":KUBE-SERVICES") {
		t.Fatalf("the killed run should have left kube-proxy's rules (err %v)", err)
	}
	if dirs := cgroupDirs(nodeCgroup); len(dirs) < 2 {
		t.Fatalf("the killed run should have left its pods' cgroups, found %v", dirs)
	}
	if v, _ := readSysctl("net.ipv4.ip_forward"); v != "1" {
		t.Fatalf("the killed run should have left net.ipv4.ip_forward=1 (its pod network's), found %s", v)
	}
	if err := first.Stop(); err != nil {
		t.Logf("stop the rest of the killed run: %v", err)
	}

	second, err := Start(ctx, Options{RealNode: true, NoAdapter: true, NoFakeNodes: true, Log: testLog{t}, nodeLock: lock})
	if err != nil {
		t.Fatal(err)
	}
	secondRoot := second.nodes[0].paths.root
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), firstRoot+"/") {
		t.Errorf("mounts of the killed run under %s survived the next start", firstRoot)
	}
	runPod(second, "second")
	if err := second.Stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	assertNodeLeftNothing(t, firstRoot)
	assertNodeLeftNothing(t, secondRoot)
	assertSysctlsUnchanged(t, kernelBefore, sysctlSnapshot(t))
}

// waitNodeLockBlocking waits for the real-node lock in a blocking flock: the
// kernel wakes it as the watchdog lets go, before another run polling for
// the lock (every 500 ms) can take it and start a watchdog of its own over
// the machine-wide state this test then reads.
func waitNodeLockBlocking(ctx context.Context, log func(string, ...any)) (*nodeLock, error) {
	if l, err := tryNodeLock(); !errors.Is(err, errNodeLockHeld) {
		return l, err
	}
	log("another run holds the real-node lock %s; waiting", nodeLockFile)
	f, err := os.OpenFile(nodeLockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	got := make(chan error, 1)
	go func() { got <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, err
		}
		return &nodeLock{f: f}, nil
	case <-ctx.Done():
		f.Close() // the blocked flock goroutine ends with the test binary
		return nil, fmt.Errorf("waiting for the real-node lock: %w", ctx.Err())
	}
}
