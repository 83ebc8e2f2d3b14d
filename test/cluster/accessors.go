package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ebbflow/ebbflow/test/promtest"
)

// AdminKubeconfig returns the path of a kubeconfig for a system:masters user.
func (c *Cluster) AdminKubeconfig() string { return c.adminKubeconfig }

// RESTConfig returns a new copy of the admin client configuration; callers may
// modify it.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns a clientset for the admin user.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Prometheus returns the cluster's Prometheus. Stop and Restart it to
// simulate outages; Close is done by Cluster.Stop.
func (c *Cluster) Prometheus() *promtest.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prom
}

// AdapterURL returns the adapter's base URL, https://127.0.0.1:<port>. The
// port stays the same across adapter restarts.
func (c *Cluster) AdapterURL() string { return fmt.Sprintf("https://127.0.0.1:%d", c.ports.adapter) }

// AdapterCA returns the PEM CA certificate that signed the adapter's serving
// certificate (also the APIServices' caBundle).
func (c *Cluster) AdapterCA() []byte { return append([]byte(nil), c.pki.adapterCA.CertPEM...) }

// Kubectl returns the path of the pinned kubectl (v1.37.2, built by
// hack/build-tools.sh); run it with --kubeconfig AdminKubeconfig().
func (c *Cluster) Kubectl() string { return c.tools.kubectl }

// Dir returns the work directory.
func (c *Cluster) Dir() string { return c.dir }

// logPath returns the log file of a component.
func (c *Cluster) logPath(component string) string {
	if component == Prometheus {
		return filepath.Join(c.dir, "prometheus", "prometheus.log")
	}
	return filepath.Join(c.dir, component+".log")
}

// LogTail returns up to the last n lines of a component's log (all its runs):
// "etcd", "kube-apiserver", "kube-controller-manager", "kwok",
// "ebbflow-adapter", "ebbflow-autoscaler" or "prometheus". It never fails; a missing log yields a
// note.
func (c *Cluster) LogTail(component string, n int) string { return logTail(c.logPath(component), n) }

// DumpLogs returns the last n lines of every component's log, each under a
// header, for failure reports.
func (c *Cluster) DumpLogs(n int) string {
	var b strings.Builder
	for _, comp := range []string{Etcd, KubeAPIServer, KubeControllerManager, Kwok, Prometheus, Adapter, Autoscaler,
		Containerd, Kubelet, KubeScheduler, KubeProxy} {
		if _, err := os.Stat(c.logPath(comp)); err != nil {
			continue // never started
		}
		fmt.Fprintf(&b, "===== %s (%s), last %d lines =====\n%s\n", comp, c.logPath(comp), n, c.LogTail(comp, n))
	}
	if ha := c.HA(); ha != nil {
		fmt.Fprintf(&b, "===== highly available prometheus, last %d lines each =====\n%s\n", n, ha.LogTail(n))
	}
	return b.String()
}

// Stop ends every process the cluster started (SIGTERM to each process group,
// SIGKILL after a grace period), closes Prometheus and removes the work
// directory if Start created it. It is idempotent and returns once all
// processes have been reaped, so their ports are free.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	procs := c.procs
	c.procs = map[string]*process{}
	prom, ha := c.prom, c.ha
	c.mu.Unlock()

	// Clients of kube-apiserver first, then the real node (its pods deleted
	// through kube-apiserver), etcd last, so nothing spends its grace period
	// retrying a server that is already gone.
	var errs []error
	for i, stage := range [][]string{{Autoscaler, Adapter, Kwok, KubeControllerManager}, {KubeAPIServer}, {Etcd}} {
		if i == 1 {
			if err := c.stopRealNode(procs); err != nil {
				errs = append(errs, fmt.Errorf("stop the real node: %w", err))
			}
		}
		var wg sync.WaitGroup
		for _, name := range stage {
			if p := procs[name]; p != nil {
				wg.Go(func() { p.Stop(stopGrace) })
				delete(procs, name)
			}
		}
		wg.Wait()
	}
	for _, p := range procs { // anything not named above
		p.Stop(stopGrace)
	}
	if ha != nil {
		if err := ha.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close highly available prometheus: %w", err))
		}
	}
	if prom != nil {
		if err := prom.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close prometheus: %w", err))
		}
	}
	if c.ownsDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove work directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// AdapterRelistInterval returns the adapter's --metrics-relist-interval (its
// --metrics-max-age too: the adapter's default).
func (c *Cluster) AdapterRelistInterval() time.Duration { return c.opts.AdapterRelistInterval }

// AdapterBinary returns the path of the ebbflow-adapter binary Start built
// from this checkout (also with Options.NoAdapter), for tests that run it
// with flags of their own, e.g. those a Helm chart renders.
func (c *Cluster) AdapterBinary() string { return c.tools.adapterBinPath }
