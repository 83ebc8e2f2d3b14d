package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ebbflow/ebbflow/test/certs"
)

// Start-up bounds, generous for a loaded 2-core machine.
const (
	etcdTimeout          = 30 * time.Second
	apiserverTimeout     = 90 * time.Second
	controllerMgrTimeout = 60 * time.Second
)

// sbinPath is PATH with the system directories appended: containerd finds
// runc and its shim, kube-proxy iptables, there, also when the tests run with
// a user's PATH.
func sbinPath() string {
	return "PATH=" + os.Getenv("PATH") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

// launch starts a component with its log at <dir>/<name>.log and records it.
func (c *Cluster) launch(name, bin string, args []string) (*process, error) {
	return c.launchEnv(name, bin, args)
}

// launchEnv is launch with env added to the environment.
func (c *Cluster) launchEnv(name, bin string, args []string, env ...string) (*process, error) {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("start %s: cluster is stopped", name)
	}
	p, err := startProcess(name, c.dir, c.logPath(name), bin, args, append([]string{sbinPath()}, env...))
	if err != nil {
		return nil, err
	}
	c.setProc(name, p)
	return p, nil
}

// startEtcd starts a single-member etcd on loopback and waits for /health.
func (c *Cluster) startEtcd(ctx context.Context) error {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcd)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	p, err := c.launch(Etcd, c.tools.etcd, []string{
		"--name=ebbflow",
		"--data-dir=" + filepath.Join(c.dir, "etcd-data"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=ebbflow=" + peer,
		"--unsafe-no-fsync", // throw-away data: skip fsync on a slow disk
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	hc, err := httpsClient(nil, nil)
	if err != nil {
		return err
	}
	return waitFor(ctx, "etcd /health", etcdTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, client+"/health")
	})
}

// startAPIServer starts kube-apiserver with RBAC, service accounts and the
// front-proxy setup the aggregation layer needs, and waits for /readyz.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	p := c.pki
	audit, err := c.auditArgs()
	if err != nil {
		return err
	}
	p0, err := c.launch(KubeAPIServer, c.tools.apiserver, append(append([]string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcd),
		"--bind-address=" + c.APIServerHost(),
		"--secure-port=" + strconv.Itoa(c.ports.apiserver),
		"--cert-dir=" + filepath.Join(c.dir, "kube-apiserver-certs"),
		"--tls-cert-file=" + p.apiserverCert,
		"--tls-private-key-file=" + p.apiserverKey,
		"--client-ca-file=" + p.caFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		// Aggregation: the proxy client certificate comes from a CA of its own.
		"--requestheader-client-ca-file=" + p.frontProxyCAFile,
		"--requestheader-allowed-names=" + frontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + p.proxyClientCert,
		"--proxy-client-key-file=" + p.proxyClient,
		"--allow-privileged=true",
		"--profiling=false",
	}, c.apiserverNodeArgs()...), audit...))
	if err != nil {
		return err
	}
	hc, err := httpsClient(p.clusterCA.CertPEM, &p.admin)
	if err != nil {
		return err
	}
	return waitFor(ctx, "kube-apiserver /readyz", apiserverTimeout, p0, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, c.apiserverURL()+"/readyz")
	})
}

// apiserverNodeArgs are kube-apiserver's flags that depend on the real node.
// Without one, it listens on loopback, which the endpoint reconciler refuses
// to advertise. With one, it advertises the bridge's address (the kubernetes
// Service's endpoint for pods), authorizes kubelets with the Node authorizer
// and reaches them with a client certificate.
func (c *Cluster) apiserverNodeArgs() []string {
	if !c.opts.RealNode {
		return []string{"--endpoint-reconciler-type=none", "--authorization-mode=RBAC"}
	}
	return []string{
		"--advertise-address=" + podGateway,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + c.pki.kubeletClientCert,
		"--kubelet-client-key=" + c.pki.kubeletClientKey,
		"--kubelet-certificate-authority=" + c.pki.caFile,
		"--kubelet-preferred-address-types=InternalIP",
	}
}

// controllers returns kube-controller-manager's --controllers value.
func (c *Cluster) controllers() string {
	list := []string{"*", "-nodeipam"}
	if !c.opts.RealNode {
		// kwok's nodes need no lifecycle. A kubelet registers its Node with
		// the not-ready taint, which only this controller removes.
		list = append(list, "-nodelifecycle")
	}
	if c.kcm.DisableHPAController {
		list = append(list, "-horizontalpodautoscaling")
	}
	return strings.Join(list, ",")
}

// startControllerManager starts kube-controller-manager with one service
// account per controller (as in a real cluster, so the HPA controller acts
// as system:serviceaccount:kube-system:horizontal-pod-autoscaler) and waits
// for /healthz on its secure port.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: controllerMgrUser})
	if err != nil {
		return err
	}
	kubeconfig, err := c.writeKubeconfig("kube-controller-manager", pair)
	if err != nil {
		return err
	}
	p, err := c.launch(KubeControllerManager, c.tools.controllerMgr, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.controllerMgr),
		"--cert-dir=" + filepath.Join(c.dir, "kube-controller-manager-certs"),
		"--service-account-private-key-file=" + c.pki.saKey,
		"--root-ca-file=" + c.pki.caFile,
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--controllers=" + c.controllers(),
		"--horizontal-pod-autoscaler-sync-period=" + c.opts.HPASyncPeriod.String(),
		"--profiling=false",
		// /metrics as well, for the benchmarks (loopback only).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
	}, c.kcm.Args...))
	if err != nil {
		return err
	}
	hc, err := httpsClient(nil, nil)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.controllerMgr)
	return waitFor(ctx, "kube-controller-manager /healthz", controllerMgrTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, url)
	})
}
