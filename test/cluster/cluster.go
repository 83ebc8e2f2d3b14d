// Package cluster runs a real Kubernetes control plane on loopback for the
// end-to-end tests and the demo: etcd, kube-apiserver, kube-controller-manager,
// kwok (fake Nodes that run pods without a kubelet), Prometheus and
// ebbflow-adapter registered as the custom and external metrics APIs through
// the aggregation layer; on request (StartAutoscaler) also ebbflow-autoscaler
// with its CRD and the RBAC of manifests/autoscaler.
//
// Every process runs in its own process group with its output in
// <Dir>/<component>.log and, on Linux, dies with the process that started it.
// Stop ends them all. Binaries come from hack/build-tools.sh (built once and
// cached) and Debian's prometheus (hack/install-prometheus.sh); the adapter is
// built from this module with the go command.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ebbflow/ebbflow/test/promtest"
	"github.com/ebbflow/ebbflow/test/thanostest"
)

// Component names accepted by LogTail.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	Kwok                  = "kwok"
	Adapter               = "ebbflow-adapter"
	PrometheusAdapter     = "prometheus-adapter" // StartPrometheusAdapter
	Prometheus            = "prometheus"
)

// Options configure a cluster. Only RulesYAML is required.
type Options struct {
	// Nodes is the number of kwok fake Nodes (default 3), named kwok-node-0...,
	// annotated kwok.x-k8s.io/node=fake, each with 32 CPUs, 128Gi memory and
	// room for 110 pods. There is no scheduler: pods must set nodeName.
	Nodes int
	// HPASyncPeriod is kube-controller-manager's
	// --horizontal-pod-autoscaler-sync-period (default 5s).
	HPASyncPeriod time.Duration
	// DisableHPAController switches off kube-controller-manager's HPA
	// controller, so another controller can manage HorizontalPodAutoscalers.
	DisableHPAController bool
	// RulesYAML is the adapter's rule file (prometheus-adapter format).
	RulesYAML []byte
	// PrometheusTargets are scraped from the start; change them later with
	// Prometheus().SetTargets.
	PrometheusTargets []promtest.Target
	// ScrapeInterval is Prometheus' scrape interval (default 1s).
	ScrapeInterval time.Duration
	// PrometheusRetention is Prometheus' TSDB retention (default one day);
	// set it to keep backfilled history older than that.
	PrometheusRetention time.Duration
	// PrometheusBackfill, if set, is history in OpenMetrics text (samples
	// with timestamps, ending in "# EOF") written into Prometheus' data
	// directory with promtool before Prometheus starts. A series that is
	// also scraped should carry the same labels as the scraped one (e.g.
	// export job and instance with HonorLabels), or the two are different
	// series that a sum adds up. Not with HAPrometheus.
	PrometheusBackfill []byte
	// AdapterRelistInterval is the adapter's --metrics-relist-interval
	// (default 10s).
	AdapterRelistInterval time.Duration
	// Log receives progress lines with timings (one Write per line, never
	// concurrently) during Start; nil discards them.
	Log io.Writer
	// HAPrometheus, if set, runs Prometheus replicas behind Thanos Query
	// instead of one Prometheus; the adapter then queries Thanos Query.
	HAPrometheus *HAPrometheus
	// AdapterArgs are appended to the adapter's command line (flags given
	// twice: the later wins, or repeats for repeatable flags). Change them for
	// the next start with SetAdapterArgs.
	AdapterArgs []string
	// AuditLog makes kube-apiserver write an audit log of every request
	// (Metadata level, one event per completed request; see AuditLogDir),
	// e.g. to count a controller's requests by user. Off by default: it costs
	// kube-apiserver CPU and disk.
	AuditLog bool
	// RealNode adds a real node (kubelet, containerd, runc, the CNI bridge),
	// kube-scheduler and kube-proxy next to kwok's fake Nodes, which are then
	// tainted NoSchedule (pods that name a kwok Node still run there). Needs
	// root and Debian's containerd, runc and CNI plugins (hack/install-node.sh);
	// one real node runs on a machine at a time (a lock). kube-apiserver then
	// listens on the pod network's gateway (APIServerHost), not loopback.
	RealNode bool
	// ExtraRealNodes adds this many more real nodes (0 to 3) beside the
	// first: kubelets named ebbflow-node-2, -3, … each with its own
	// containerd, on the same machine and pod network (node_nodes.go). Each
	// reports the machine's CPUs, so the cluster schedules more requests
	// than the machine has, as kind's nodes on one host do. Only with
	// RealNode; images imported with ImportImage go to every node.
	ExtraRealNodes int
	// NoFakeNodes starts no kwok and creates no fake Nodes (Nodes is then
	// ignored), e.g. with RealNode for a cluster of one real node; kwok is then
	// neither built nor started.
	NoFakeNodes bool
	// ClusterDNS gives the real node's pods a cluster DNS (node_dns.go): the
	// A records <service>.<namespace>.svc.cluster.local of Services'
	// ClusterIPs, served by this process on the pod network's gateway and
	// named by the kubelet as clusterDNS. Only with RealNode.
	ClusterDNS bool
	// PauseImageTarball is the sandbox image tarball for the real node
	// (default: built with hack/image into _output/images).
	PauseImageTarball string
	// NoAdapter starts no ebbflow-adapter and registers no APIServices (e.g.
	// for a test that installs the Helm chart); RulesYAML is then optional.
	NoAdapter bool
	// nodeLock, if set, is the real-node lock already held by the caller (a
	// test that checks the machine before and after): Start uses it instead
	// of waiting for the lock, and Stop leaves it held.
	nodeLock *nodeLock
	// Dir is the work directory (certificates, kubeconfigs, data, logs). Empty
	// means a new temporary directory that Stop removes. A given Dir is kept
	// after Stop. It must be empty or a Dir of an earlier cluster, whose
	// state Start removes first, so every cluster starts from empty etcd and
	// Prometheus data.
	Dir string
}

func (o Options) withDefaults() Options {
	switch {
	case o.NoFakeNodes:
		o.Nodes = 0
	case o.Nodes <= 0:
		o.Nodes = 3
	}
	if o.HPASyncPeriod <= 0 {
		o.HPASyncPeriod = 5 * time.Second
	}
	if o.ScrapeInterval <= 0 {
		o.ScrapeInterval = time.Second
	}
	if o.AdapterRelistInterval <= 0 {
		o.AdapterRelistInterval = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Cluster is a running local cluster. Its methods are safe for concurrent use.
type Cluster struct {
	opts    Options
	dir     string
	ownsDir bool
	tools   tools
	pki     *pki
	ports   ports
	apis    []metricsAPI // APIServices for the adapter, from Options.RulesYAML

	adminKubeconfig  string
	restConfig       *rest.Config
	client           kubernetes.Interface
	prom             *promtest.Server
	ha               *thanostest.HA // Options.HAPrometheus; prom is its replica 0
	extraAdapterArgs []string       // Options.AdapterArgs or SetAdapterArgs

	logMu sync.Mutex // serializes writes to opts.Log

	mu      sync.Mutex
	procs   map[string]*process
	stopped bool

	autoscalerMu   sync.Mutex // serializes StartAutoscaler
	autoscalerPort int        // ebbflow-autoscaler's --health-addr port, once chosen
	autoscalerArgs []string   // command line of the last autoscaler started

	kcm ControllerManagerOptions // of the running kube-controller-manager

	// The real node (Options.RealNode).
	nodes        []realNode // the first, then Options.ExtraRealNodes
	nodePorts    nodePorts  // of the components the nodes share
	nodeLock     *nodeLock  // held from prepareRealNode to stopRealNode
	ownsNodeLock bool       // taken by prepareRealNode, not Options.nodeLock
	nodeOwner    nodeOwner
	watchdog     *watchdog   // sweeps the node if this process dies first
	dns          *clusterDNS // Options.ClusterDNS
}

// ports are the loopback ports of the cluster's components.
type ports struct {
	etcd, etcdPeer, apiserver, controllerMgr, adapter int
}

// Start brings up a cluster and returns once kube-apiserver is ready, the
// Nodes are Ready and the three metrics APIServices are Available. ctx bounds
// only the start-up; the processes run until Stop, which the caller must call.
// On error everything already started is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if len(opts.RulesYAML) == 0 && !opts.NoAdapter {
		return nil, errors.New("cluster: Options.RulesYAML is required")
	}
	if len(opts.PrometheusBackfill) > 0 && opts.HAPrometheus != nil {
		return nil, errors.New("cluster: Options.PrometheusBackfill applies to a single Prometheus, not HAPrometheus")
	}
	if err := opts.validateExtraNodes(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	var apis []metricsAPI
	if !opts.NoAdapter {
		var err error
		if apis, err = metricsAPIsFor(opts.RulesYAML); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	c := &Cluster{opts: opts, dir: opts.Dir, apis: apis, procs: map[string]*process{}, extraAdapterArgs: opts.AdapterArgs,
		kcm: ControllerManagerOptions{DisableHPAController: opts.DisableHPAController}}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", ownedDirPrefix+"*"); err != nil {
			return nil, fmt.Errorf("cluster: create work directory: %w", err)
		}
		c.ownsDir = true
	} else if err := prepareDir(c.dir); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if c.dir, err = filepath.Abs(c.dir); err != nil {
		return nil, fmt.Errorf("cluster: work directory: %w", err)
	}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			err = fmt.Errorf("cluster: %w", err)
		}
	}()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// StartT starts a cluster for a test and stops it in t.Cleanup. If the test
// failed, the cleanup first logs the tail of every component's log. It fails
// the test if the cluster does not start.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.DumpLogs(40))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("cluster: %v", err)
		}
	})
	return c
}

// start runs the start-up steps in order, overlapping independent ones.
func (c *Cluster) start(ctx context.Context) error {
	total := time.Now()
	var err error
	if err := c.step("locate tools", func() error {
		c.tools, err = locateTools(ctx, c.opts.Log, c.opts.RealNode, !c.opts.NoFakeNodes)
		return err
	}); err != nil {
		return err
	}
	if c.opts.RealNode {
		// The guard goes in before any component can send a packet.
		if err := c.step("real-node lock, sweep, bridge and guard", func() error { return c.prepareRealNode(ctx) }); err != nil {
			return err
		}
	}
	// The adapter build and Prometheus do not need the control plane.
	buildDone := make(chan error, 1)
	go func() {
		t0 := time.Now()
		err := buildAdapter(ctx, c.tools)
		c.logf("built ebbflow-adapter in %v", since(t0))
		if err == nil && c.opts.RealNode && c.opts.PauseImageTarball == "" {
			c.opts.PauseImageTarball, err = buildPauseImage(ctx, c.tools)
		}
		buildDone <- err
	}()
	promDone := make(chan error, 1)
	go func() {
		if c.opts.RealNode {
			promDone <- nil // started after the node: it discovers pods through kube-apiserver
			return
		}
		if c.opts.HAPrometheus != nil {
			promDone <- c.startHAPrometheus(ctx)
			return
		}
		promDone <- c.startPrometheus(ctx, c.prometheusOptions())
	}()
	// Always collect both goroutines before returning.
	var buildErr, promErr error
	collected := false
	collect := func() {
		if !collected {
			buildErr, promErr, collected = <-buildDone, <-promDone, true
		}
	}
	defer collect()

	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"generate certificates", c.generatePKI},
		{"etcd", c.startEtcd},
		{"kube-apiserver", c.startAPIServer},
		{"kube-controller-manager", c.startControllerManager},
	}
	if !c.opts.NoFakeNodes {
		steps = append(steps, struct {
			name string
			fn   func(context.Context) error
		}{"kwok and nodes", c.startKwok})
	}
	if !c.opts.NoAdapter {
		steps = append(steps, struct {
			name string
			fn   func(context.Context) error
		}{"adapter RBAC, namespace and service", c.applyAdapterObjects})
	}
	for _, s := range steps {
		if err := c.step(s.name, func() error { return s.fn(ctx) }); err != nil {
			return err
		}
	}
	collect()
	if err := errors.Join(buildErr, promErr); err != nil {
		return err
	}
	if c.opts.RealNode {
		if err := c.step("real node (containerd, kubelet, kube-scheduler, kube-proxy)", func() error { return c.startRealNode(ctx) }); err != nil {
			return err
		}
		if err := c.step("prometheus 3 (pods and kubelet)", func() error { return c.startNodePrometheus(ctx) }); err != nil {
			return err
		}
	}
	if !c.opts.NoAdapter {
		if err := c.step("ebbflow-adapter and APIServices", func() error { return c.StartAdapter(ctx) }); err != nil {
			return err
		}
	}
	c.logf("cluster ready in %v (dir %s, kube-apiserver %s)", since(total), c.dir, c.apiserverURL())
	return nil
}

// step runs fn and logs its duration.
func (c *Cluster) step(name string, fn func() error) error {
	t0 := time.Now()
	c.logf("starting %s…", name)
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c.logf("%s ready in %v", name, since(t0))
	return nil
}

func (c *Cluster) logf(format string, args ...any) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	fmt.Fprintf(c.opts.Log, "%s cluster: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func since(t time.Time) time.Duration { return time.Since(t).Round(10 * time.Millisecond) }

// setProc records the running process of a component.
func (c *Cluster) setProc(name string, p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs[name] = p
}

// ownedDirPrefix begins the name of a work directory Start made (and Stop
// removes).
const ownedDirPrefix = "ebbflow-cluster-"

// dirMarker marks a directory as a cluster work directory that Start may
// clean.
const dirMarker = ".ebbflow-cluster"

// prepareDir creates dir, or removes from it what an earlier cluster wrote.
// It refuses a non-empty directory that is not a cluster work directory, so
// a wrong Dir never costs anyone their files.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read work directory: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, dirMarker)); err != nil && len(entries) > 0 {
		return fmt.Errorf("work directory %s is not empty and was not made by a cluster (no %s)", dir, dirMarker)
	}
	stale := []string{"pki", "kubeconfigs", "etcd-data", "prometheus", "thanos", "adapter", "kube-apiserver-certs", "kube-controller-manager-certs", auditDir}
	for _, comp := range []string{Etcd, KubeAPIServer, KubeControllerManager, Kwok, Adapter, Autoscaler, Containerd, Kubelet, KubeScheduler, KubeProxy} {
		stale = append(stale, comp+".log")
	}
	extraLogs, _ := filepath.Glob(filepath.Join(dir, "*-"+RealNodeName+"-*.log")) // extra real nodes'
	for _, p := range extraLogs {
		stale = append(stale, filepath.Base(p))
	}
	for _, name := range stale {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("clean work directory: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, dirMarker), []byte("ebbflow test/cluster work directory\n"), 0o644); err != nil {
		return fmt.Errorf("mark work directory: %w", err)
	}
	return nil
}
