package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/certs"
)

// Components of the real node.
const (
	Kubelet       = "kubelet"
	KubeScheduler = "kube-scheduler"
	KubeProxy     = "kube-proxy"
	// RealNodeName is the real node's Node name.
	RealNodeName       = "ebbflow-node"
	realNodeTimeout    = 90 * time.Second
	schedulerTimeout   = 60 * time.Second
	kubeProxyTimeout   = 60 * time.Second
	kubeletSyncSeconds = 10
)

// nodePorts are the loopback ports of the components the real nodes share
// (each kubelet's are in its realNode).
type nodePorts struct {
	scheduler, proxyHealthz, proxyMetrics int
}

// kubeletConfig is the KubeletConfiguration of the real node. What this
// machine needs (see docs/real-node.md): cgroup v1 allowed, cgroupfs, no
// oom_score_adj change, no iptables chains of the kubelet's, a resolv.conf of
// the run's; image garbage collection off (the images were imported, there is
// no registry to pull them again); disk eviction at an absolute threshold
// (node_disk.go); protectKernelDefaults, so that the kubelet
// changes no kernel setting (it runs in a view where the settings it checks
// read as it wants them, node_kernelview.go); the pods' logs below the node
// root (nodePaths.podLogs).
func (c *Cluster) kubeletConfig(n realNode, certFile, keyFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%s
resolvConf: %s
clusterDomain: cluster.local
%smakeIPTablesUtilChains: false
protectKernelDefaults: true
oomScoreAdj: 0
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "%s", imagefs.available: "%s", nodefs.inodesFree: "1%%"}
syncFrequency: %ds
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
podCIDR: %s
maxPods: 110
rotateCertificates: false
serverTLSBootstrap: false
shutdownGracePeriod: 0s
podLogsDir: %s
`, n.cgroup, podGateway, n.kubeletPort, n.healthzPort, certFile, keyFile, c.pki.caFile,
		n.paths.socket, n.paths.resolvConf, c.kubeletClusterDNS(), evictionDiskAvailable, evictionDiskAvailable,
		kubeletSyncSeconds, podCIDR, n.paths.podLogs)
}

// kubeletClusterDNS is the kubelet's clusterDNS line (with its newline), or
// nothing without Options.ClusterDNS.
func (c *Cluster) kubeletClusterDNS() string {
	if !c.opts.ClusterDNS {
		return ""
	}
	return "clusterDNS: [" + podGateway + "]\n"
}

// startKubelet starts the kubelet of real node n and waits until its Node
// is Ready.
func (c *Cluster) startKubelet(ctx context.Context, n realNode) error {
	pki := c.pki
	serving, err := pki.clusterCA.Issue(certs.Spec{CommonName: n.name, Server: true,
		IPs: append(certs.LoopbackIPs(), net.ParseIP(podGateway)), DNSNames: []string{n.name, "localhost"}})
	if err != nil {
		return err
	}
	certFile, keyFile, err := serving.Write(pki.dir, n.proc(Kubelet)+"-serving")
	if err != nil {
		return err
	}
	client, err := pki.clusterCA.Issue(certs.Spec{CommonName: "system:node:" + n.name, Orgs: []string{"system:nodes"}})
	if err != nil {
		return err
	}
	kubeconfig, err := c.writeKubeconfig(n.proc(Kubelet), client)
	if err != nil {
		return err
	}
	if err := shareKubeletRoot(n.paths.kubeletRoot); err != nil {
		return err
	}
	if c.opts.ClusterDNS && c.dns == nil {
		if c.dns, err = startClusterDNS(net.JoinHostPort(podGateway, "53"), c.client); err != nil {
			return err
		}
	}
	config := filepath.Join(n.paths.root, "kubelet.yaml")
	if err := os.WriteFile(config, []byte(c.kubeletConfig(n, certFile, keyFile)), 0o644); err != nil {
		return fmt.Errorf("write kubelet configuration: %w", err)
	}
	bin, args, err := kubeletInKernelView(filepath.Join(n.paths.root, "kernel-view"), c.tools.kubelet, []string{
		"--config=" + config,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + n.paths.kubeletRoot,
		"--cert-dir=" + filepath.Join(n.paths.root, "kubelet-certs"),
		"--hostname-override=" + n.name,
		"--node-ip=" + podGateway,
		"--node-labels=ebbflow.dev/node=real",
		"--v=1",
	})
	if err != nil {
		return err
	}
	p, err := c.launch(n.proc(Kubelet), bin, args)
	if err != nil {
		return err
	}
	return waitFor(ctx, "real node "+n.name+" Ready", realNodeTimeout, p, func(ctx context.Context) (bool, error) {
		node, err := c.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !nodeReady(node) {
			return false, fmt.Errorf("node %s not Ready", n.name)
		}
		return true, nil
	})
}

// startScheduler starts kube-scheduler (pods of the real node need no
// nodeName) and waits for /healthz.
func (c *Cluster) startScheduler(ctx context.Context) error {
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: "system:kube-scheduler"})
	if err != nil {
		return err
	}
	kubeconfig, err := c.writeKubeconfig("kube-scheduler", pair)
	if err != nil {
		return err
	}
	p, err := c.launch(KubeScheduler, c.tools.scheduler, []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.nodePorts.scheduler),
		"--leader-elect=false",
		"--profiling=false",
	})
	if err != nil {
		return err
	}
	hc, err := httpsClient(nil, nil)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", c.nodePorts.scheduler)
	return waitFor(ctx, "kube-scheduler /healthz", schedulerTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, url)
	})
}

// startKubeProxy starts kube-proxy in iptables mode, leaving the machine's
// conntrack settings alone, waits until it has synced its rules and puts the
// guard back in front of its jumps.
func (c *Cluster) startKubeProxy(ctx context.Context) error {
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: "system:kube-proxy"})
	if err != nil {
		return err
	}
	kubeconfig, err := c.writeKubeconfig("kube-proxy", pair)
	if err != nil {
		return err
	}
	p, err := c.launch(KubeProxy, c.tools.proxy, []string{
		"--kubeconfig=" + kubeconfig,
		"--hostname-override=" + RealNodeName,
		"--bind-address=" + podGateway, // the node's IP
		"--proxy-mode=iptables",
		"--cluster-cidr=" + podCIDR,
		"--nodeport-addresses=" + podGateway + "/32",
		"--healthz-bind-address=127.0.0.1:" + strconv.Itoa(c.nodePorts.proxyHealthz),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(c.nodePorts.proxyMetrics),
		"--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0",
		"--conntrack-tcp-timeout-close-wait=0",
		"--v=1",
	})
	if err != nil {
		return err
	}
	hc, err := httpsClient(nil, nil)
	if err != nil {
		return err
	}
	// /livez: its rules are synced. (/healthz also reports the Node's
	// eligibility, which a proxy started before the Node exists fails.)
	url := fmt.Sprintf("http://127.0.0.1:%d/livez", c.nodePorts.proxyHealthz)
	if err := waitFor(ctx, "kube-proxy /livez", kubeProxyTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, url)
	}); err != nil {
		return err
	}
	// /livez answers before the first sync (a proxier counts as healthy
	// while it starts), and the first sync of each IP family prepends its
	// jumps: only after it can the guard go back in front of them.
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", c.nodePorts.proxyMetrics)
	if err := waitFor(ctx, "kube-proxy's first sync of every IP family", kubeProxyTimeout, p, func(ctx context.Context) (bool, error) {
		return kubeProxySynced(ctx, hc, metrics)
	}); err != nil {
		return err
	}
	return reassertGuard(ctx)
}

// kubeProxySynced reports whether every proxier of kube-proxy (one per IP
// family; each sets kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds
// when its loop starts) has synced its rules once
// (kubeproxy_sync_proxy_rules_last_timestamp_seconds).
func kubeProxySynced(ctx context.Context, hc *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return false, nil
	}
	queued, synced := map[string]bool{}, map[string]bool{}
	for line := range strings.Lines(string(body)) {
		for prefix, seen := range map[string]map[string]bool{
			"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family=\"": queued,
			"kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"":        synced,
		} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				family, _, _ := strings.Cut(rest, "\"")
				seen[family] = true
			}
		}
	}
	if len(queued) == 0 {
		return false, nil
	}
	for family := range queued {
		if !synced[family] {
			return false, nil
		}
	}
	return true, nil
}
