package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// containerd of the real node: Debian's containerd 1.6 with its root, state,
// sockets, runc state, CNI configuration and IPAM data under <dir>/node, so
// it shares nothing with a containerd of the machine.
const (
	Containerd = "containerd"
	// PauseImage is the sandbox image, built locally (hack/image) and named
	// as containerd's sandbox_image; never pulled.
	PauseImage         = "registry.k8s.io/pause:3.10"
	cniNetworkName     = "ebbflow"
	containerdTimeout  = 30 * time.Second
	containerdNS       = "k8s.io"
	containerdCRIAgent = "io.containerd.grpc.v1.cri"
)

// RegistryGuard is where the node's containerd sends every registry request:
// a proxy address on loopback where nothing listens (the discard port). The
// images the node runs are imported, never pulled; should a pod name an image
// that is not there (or use imagePullPolicy Always), the pull fails at once
// with "proxyconnect tcp: dial tcp 127.0.0.1:9" instead of reaching a
// registry off the machine, and no registry name is even resolved here (the
// proxy would resolve it). The pod network's guard chains cannot see these
// requests: containerd pulls from the host's network namespace.
const RegistryGuard = "127.0.0.1:9"

// registryGuardEnv points containerd's HTTP clients (its registry resolver
// uses Go's proxy-from-environment) at RegistryGuard.
var registryGuardEnv = []string{
	"HTTPS_PROXY=http://" + RegistryGuard, "HTTP_PROXY=http://" + RegistryGuard,
	"https_proxy=http://" + RegistryGuard, "http_proxy=http://" + RegistryGuard,
	"NO_PROXY=", "no_proxy=",
}

// nodePaths are the real node's directories and files.
type nodePaths struct {
	root                          string // <dir>/node
	containerdRoot, containerdRun string
	socket, config                string
	runcRoot                      string
	cniConf, cniData              string
	kubeletRoot, resolvConf       string
	// podLogs is the kubelet's podLogsDir: below the root, not the machine's
	// /var/log/pods, so the pods' logs go with the run (a kubelet also
	// removes from it what belongs to pods it does not know, which would
	// be another real node's).
	podLogs string
	// rangeStart and rangeEnd bound the pod addresses this node's containerd
	// hands out (extra real nodes share podCIDR); empty: all of it.
	rangeStart, rangeEnd string
}

func newNodePaths(dir string) nodePaths { return newNodePathsAt(filepath.Join(dir, "node")) }

// newNodePathsAt lays out a node's directories and files below root.
func newNodePathsAt(root string) nodePaths {
	return nodePaths{
		root:           root,
		containerdRoot: filepath.Join(root, "containerd", "root"),
		containerdRun:  filepath.Join(root, "containerd", "state"),
		socket:         filepath.Join(root, "containerd", "containerd.sock"),
		config:         filepath.Join(root, "containerd", "config.toml"),
		runcRoot:       filepath.Join(root, "runc"),
		cniConf:        filepath.Join(root, "cni", "net.d"),
		cniData:        filepath.Join(root, "cni", "ipam"),
		kubeletRoot:    filepath.Join(root, "kubelet"),
		resolvConf:     filepath.Join(root, "resolv.conf"),
		podLogs:        filepath.Join(root, "pod-logs"),
	}
}

// containerdConfig is containerd's config.toml (version 2, containerd 1.6):
// its own paths; restrict_oom_score_adj because runc here cannot lower
// oom_score_adj; network namespaces under the state directory; the local
// pause image; only the overlayfs and native snapshotters.
func (p nodePaths) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
        SystemdCgroup = false

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, p.containerdRoot, p.containerdRun, p.socket, p.socket+".ttrpc", PauseImage, p.cniConf, p.runcRoot,
		filepath.Join(p.root, "containerd", "opt"))
}

// cniConfig is the pod network: the bridge (reused, created by the guard),
// host-local addresses from podCIDR with their data under the run, no
// masquerading (nothing may leave), and port mappings.
func (p nodePaths) cniConfig() ([]byte, error) {
	r := map[string]string{"subnet": podCIDR, "gateway": podGateway}
	if p.rangeStart != "" {
		r["rangeStart"], r["rangeEnd"] = p.rangeStart, p.rangeEnd
	}
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       cniNetworkName,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": nodeBridge, "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{r}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": p.cniData,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// writeNodeFiles writes containerd's and the CNI configuration and the pods'
// resolv.conf (a resolver on the pod's own loopback: a name lookup in a pod
// fails inside the pod instead of asking a resolver off the machine).
func (p nodePaths) writeNodeFiles() error {
	for _, d := range []string{p.containerdRoot, p.containerdRun, p.runcRoot, p.cniConf, p.cniData, p.kubeletRoot, p.podLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	cni, err := p.cniConfig()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		p.config: []byte(p.containerdConfig()),
		filepath.Join(p.cniConf, "10-ebbflow.conflist"): cni,
		p.resolvConf: []byte("nameserver 127.0.0.1\noptions ndots:1 attempts:1 timeout:1\n"),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// startContainerd starts node n's containerd and waits until it answers.
func (c *Cluster) startContainerd(ctx context.Context, n realNode) error {
	p := n.paths
	if err := p.writeNodeFiles(); err != nil {
		return err
	}
	proc, err := c.launchEnv(n.proc(Containerd), "containerd", []string{"--config=" + p.config, "--log-level=warn"}, registryGuardEnv...)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, n.proc(Containerd), containerdTimeout, proc, func(ctx context.Context) (bool, error) {
		_, err := n.ctr(ctx, "version")
		return err == nil, err
	}); err != nil {
		return err
	}
	if n.name != RealNodeName {
		// One path, the first node's: the kubelets' pod metrics come from
		// their own containerd (CRI stats), /metrics/cadvisor's labels of
		// an extra node's containers are missing.
		return nil
	}
	return linkCadvisorSocket(p.socket, c.logf)
}

// cadvisorSocket is where the kubelet's built-in cAdvisor dials containerd
// for the container labels of /metrics/cadvisor: a flag of the cAdvisor
// library that the kubelet does not expose. The run links it to its own
// socket when the path is free (no containerd of the machine's runs), and
// the sweep removes the link.
const cadvisorSocket = "/run/containerd/containerd.sock"

func linkCadvisorSocket(socket string, logf func(string, ...any)) error {
	if _, err := os.Lstat(cadvisorSocket); err == nil {
		logf("%s exists (a containerd of the machine's?): /metrics/cadvisor will lack container labels", cadvisorSocket)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(cadvisorSocket), 0o711); err != nil {
		return fmt.Errorf("link %s: %w", cadvisorSocket, err)
	}
	if err := os.Symlink(socket, cadvisorSocket); err != nil {
		return fmt.Errorf("link %s: %w", cadvisorSocket, err)
	}
	return nil
}

// unlinkCadvisorSocket removes the link to a socket under root.
func unlinkCadvisorSocket(root string) error {
	target, err := os.Readlink(cadvisorSocket)
	if err != nil || !strings.HasPrefix(target, root+"/") {
		return nil
	}
	if err := os.Remove(cadvisorSocket); err != nil {
		return fmt.Errorf("remove %s: %w", cadvisorSocket, err)
	}
	_ = os.Remove(filepath.Dir(cadvisorSocket)) // only if empty
	return nil
}

// ctr runs Debian's ctr against the first node's containerd in the k8s.io
// namespace (the one the kubelet's images and containers live in).
func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	return c.nodes[0].ctr(ctx, args...)
}

// ctr runs Debian's ctr against n's containerd in the k8s.io namespace.
func (n realNode) ctr(ctx context.Context, args ...string) (string, error) {
	return Ctr{Address: n.paths.socket, Namespace: containerdNS}.Run(ctx, args...)
}

// Ctr runs Debian's ctr against the (first) real node's containerd in the k8s.io
// namespace and returns its combined output, for tests that read what the
// kubelet made (`containers info`, `tasks ls`); the error carries the output.
func (c *Cluster) Ctr(ctx context.Context, args ...string) (string, error) {
	if !c.opts.RealNode {
		return "", fmt.Errorf("ctr: the cluster has no real node")
	}
	return c.ctr(ctx, args...)
}

// ImportImage imports an OCI or Docker image tarball into the containerd of
// every real node, for pods with imagePullPolicy IfNotPresent or Never; the
// names come from the tarball. It returns the names imported.
func (c *Cluster) ImportImage(ctx context.Context, tarball string) ([]string, error) {
	if !c.opts.RealNode {
		return nil, fmt.Errorf("import %s: the cluster has no real node", tarball)
	}
	var names []string
	for _, n := range c.nodes {
		out, err := n.ctr(ctx, "images", "import", "--platform", "linux/amd64", tarball)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.name, err)
		}
		if names, err = importedNames(out); err != nil {
			return nil, fmt.Errorf("import %s into node %s: %w", tarball, n.name, err)
		}
	}
	return names, nil
}

// importedNames reads the image names from ctr images import's output.
func importedNames(out string) ([]string, error) {
	var names []string
	for line := range strings.Lines(out) {
		// ctr 1.6 prints "unpacking NAME (sha256:...)...done".
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "unpacking" {
			names = append(names, f[1])
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("ctr imported no named image: %s", out)
	}
	return names, nil
}
