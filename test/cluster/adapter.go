package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Adapter bounds.
const (
	adapterReadyTimeout = 60 * time.Second
	// adapterConfigCheck is the adapter's --config-check-interval: short, so
	// WriteRules takes effect within a few seconds.
	adapterConfigCheck = 2 * time.Second
)

// rulesPath is the adapter's rule file.
func (c *Cluster) rulesPath() string { return filepath.Join(c.dir, "adapter", "rules.yaml") }

// WriteRules replaces the content of the adapter's rule file atomically (write
// to a temporary file, then rename), as a ConfigMap update does. The running
// adapter picks the change up within its config check interval (2s); the
// content is not validated here.
func (c *Cluster) WriteRules(yaml []byte) error {
	dir := filepath.Dir(c.rulesPath())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create adapter directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".rules-*.yaml")
	if err != nil {
		return fmt.Errorf("write rules: %w", err)
	}
	_, werr := tmp.Write(yaml)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write rules: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.rulesPath()); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("replace rules: %w", err)
	}
	return nil
}

// adapterKubeconfig is the kubeconfig of the adapter's own identity.
func (c *Cluster) adapterKubeconfig() string {
	return filepath.Join(c.dir, "kubeconfigs", "user-"+adapterUser+".kubeconfig")
}

// adapterArgs returns the adapter's command line.
func (c *Cluster) adapterArgs() []string {
	args := append(c.servingArgs(), "--config-check-interval="+adapterConfigCheck.String())
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(args, c.extraAdapterArgs...)
}

// servingArgs are the flags ebbflow-adapter shares with prometheus-adapter
// (custom-metrics-apiserver's and its own): rule file, Prometheus, port,
// certificates and identity.
func (c *Cluster) servingArgs() []string {
	p := c.pki
	kc := c.adapterKubeconfig()
	return []string{
		"--config=" + c.rulesPath(),
		"--prometheus-url=" + c.prometheusURL(),
		"--metrics-relist-interval=" + c.opts.AdapterRelistInterval.String(),
		"--secure-port=" + strconv.Itoa(c.ports.adapter),
		"--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(c.dir, "adapter", "certs"),
		"--tls-cert-file=" + p.adapterCert,
		"--tls-private-key-file=" + p.adapterKey,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--lister-kubeconfig=" + kc,
		"--v=2",
	}
}

// SetAdapterArgs replaces the flags appended to the adapter's command line
// (Options.AdapterArgs) from its next start on; RestartAdapter applies them.
func (c *Cluster) SetAdapterArgs(args []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.extraAdapterArgs = append([]string(nil), args...)
}

// StartAdapter starts ebbflow-adapter on its fixed port if it is not running,
// waits until its /readyz answers (first metric discovery done), registers or
// updates the three APIServices and waits until each is Available. A running
// adapter is left alone but the APIServices are still awaited.
func (c *Cluster) StartAdapter(ctx context.Context) error {
	return c.startServing(ctx, Adapter, c.tools.adapterBinPath, c.adapterArgs())
}

// StartPrometheusAdapter stops ebbflow-adapter and starts the binary bin of
// prometheus-adapter (hack/build-tools.sh prometheus-adapter) in its place, as
// component PrometheusAdapter: the same port, serving certificate, identity,
// rule file and Prometheus, so the registered APIServices lead to it. It
// returns as StartAdapter does; StartAdapter brings ebbflow-adapter back.
func (c *Cluster) StartPrometheusAdapter(ctx context.Context, bin string) error {
	c.StopAdapter()
	return c.startServing(ctx, PrometheusAdapter, bin, c.servingArgs())
}

// startServing starts the adapter component name (bin with args) if it is
// not running, then waits as StartAdapter does.
func (c *Cluster) startServing(ctx context.Context, name, bin string, args []string) error {
	c.mu.Lock()
	p := c.procs[name]
	c.mu.Unlock()
	if p == nil || p.Exited() {
		var err error
		if p, err = c.launch(name, bin, args); err != nil {
			return err
		}
	}
	hc, err := httpsClient(c.pki.adapterCA.CertPEM, &c.pki.admin)
	if err != nil {
		return err
	}
	if err := waitFor(ctx, name+" /readyz", adapterReadyTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, c.AdapterURL()+"/readyz")
	}); err != nil {
		return err
	}
	if err := c.ensureAPIServices(ctx); err != nil {
		return err
	}
	return c.WaitAPIServicesAvailable(ctx, apiServiceTimeout)
}

// StopAdapter stops ebbflow-adapter, or prometheus-adapter started in its
// place (SIGTERM, SIGKILL after a grace period), and returns once it has
// exited. The APIServices stay registered, so requests through kube-apiserver
// fail with 503 until StartAdapter.
func (c *Cluster) StopAdapter() {
	c.stopComponent(Adapter)
	c.stopComponent(PrometheusAdapter)
}

// stopComponent stops a component started with launch, if it runs (SIGTERM,
// SIGKILL after a grace period), and returns once it has exited.
func (c *Cluster) stopComponent(name string) {
	c.mu.Lock()
	p := c.procs[name]
	delete(c.procs, name)
	c.mu.Unlock()
	if p != nil {
		p.Stop(stopGrace)
	}
}

// RestartAdapter stops and starts ebbflow-adapter, like StopAdapter followed
// by StartAdapter.
func (c *Cluster) RestartAdapter(ctx context.Context) error {
	c.StopAdapter()
	return c.StartAdapter(ctx)
}
