package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	easclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/realnode/kit"
)

// realDemo is the real-node demo's cluster and what it installed.
type realDemo struct {
	env      *kit.Env
	cs       clients
	pluginIn string            // directory holding kubectl-ebbflow
	queueURL string            // the queue Service, http://ClusterIP
	urls     map[string]string // every Service of the app, http://ClusterIP
}

// runReal is the whole real-node demo: the cluster with the real node, the
// images imported, the chart installed with helm into a restricted
// namespace, the sample app under real HTTP load, then the verdict.
// Everything it starts is stopped before it returns, on success, failure
// and cancellation (Ctrl-C) alike.
func runReal(ctx context.Context, o options, out io.Writer) (err error) {
	began := time.Now()
	defer func() { fmt.Fprintf(out, "demo: wall time %v\n", time.Since(began).Round(time.Second)) }()
	if os.Geteuid() != 0 {
		return errors.New("the real-node demo needs root (containerd, the kubelet, network namespaces and iptables rules of the pod network); run it as root (sudo make demo), or run `make demo-fake-nodes` on kwok's fake nodes without root")
	}
	pluginDir, err := os.MkdirTemp("", "ebbflow-demo-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(pluginDir)
	if err := buildPlugin(ctx, pluginDir); err != nil {
		return err
	}
	t0 := time.Now()
	env, err := kit.Start(ctx, kit.Options{Log: out, Dir: o.workDir})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "demo: tearing down the cluster (pods, containerd, the pod network, every process)…")
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop cluster: %w", stopErr))
		}
	}()
	fmt.Fprintf(out, "demo: cluster with the real node up and images imported in %v\n", time.Since(t0).Round(time.Second))
	d := &realDemo{env: env, pluginIn: pluginDir}
	if d.cs.eas, err = easclient.NewForConfig(env.C.RESTConfig()); err != nil {
		return fmt.Errorf("autoscaler clientset: %w", err)
	}
	d.cs.kube = env.C.Client()
	if err := d.install(ctx, out); err != nil {
		return err
	}
	if err := d.deploy(ctx, out); err != nil {
		return err
	}
	return d.play(ctx, o, out)
}

// buildPlugin builds kubectl-ebbflow into dir, so that `kubectl ebbflow
// explain` runs as a user's would.
func buildPlugin(ctx context.Context, dir string) error {
	root, err := buildtools.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", dir+"/", "./cmd/kubectl-ebbflow")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build kubectl-ebbflow: %w\n%s", err, out)
	}
	return nil
}

// install installs the chart as a user does: namespaces enforcing the
// restricted Pod Security Standard, `helm install --wait` with the values
// of this cluster (and the queue's external rule), APIServices Available.
func (d *realDemo) install(ctx context.Context, out io.Writer) error {
	for _, ns := range []string{kit.ChartNS, realNS} {
		if err := d.env.RestrictedNamespace(ctx, ns); err != nil {
			return err
		}
	}
	t0 := time.Now()
	if _, err := d.env.InstallChart(ctx, d.env.ChartValues(kit.QueueRule), 4*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: helm install ebbflow charts/ebbflow -n %s --wait: deployed in %v (namespaces %s and %s enforce the restricted Pod Security Standard)\n",
		kit.ChartNS, time.Since(t0).Round(100*time.Millisecond), kit.ChartNS, realNS)
	took, err := d.env.WaitAPIServicesAvailable(ctx, 2*time.Minute, kit.AllAPIServices...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: custom, external and resource metrics APIServices Available through the chart's Service (%v after install)\n", took.Round(100*time.Millisecond))
	return nil
}

// deploy applies the sample app, its HPA and Autoscalers, waits for its
// pods, then the worker with the queue's address.
func (d *realDemo) deploy(ctx context.Context, out io.Writer) error {
	if _, err := d.env.Kubectl(ctx, realManifests(), "apply", "-f", "-"); err != nil {
		return err
	}
	d.urls = map[string]string{}
	for _, name := range []string{webHPA, webEAS, queue} {
		if _, err := cluster.WaitDeploymentReady(ctx, d.cs.kube, realNS, name, 2*time.Minute); err != nil {
			return err
		}
		ip, err := d.env.ServiceIP(ctx, realNS, name)
		if err != nil {
			return err
		}
		d.urls[name] = "http://" + ip
	}
	d.queueURL = d.urls[queue]
	if _, err := d.env.Kubectl(ctx, workerManifests(d.queueURL), "apply", "-f", "-"); err != nil {
		return err
	}
	if _, err := cluster.WaitDeploymentReady(ctx, d.cs.kube, realNS, worker, 2*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: in namespace %s: %s (HPA), %s (ebbflow Autoscaler, same spec), %s (dry-run Autoscaler on %s), %s and %s (Autoscaler 0..3, to zero after %v idle)\n",
		realNS, webHPA, webEAS, dryRun, webHPA, queue, worker, idleBeforeZero)
	return nil
}

// explain runs `kubectl ebbflow explain -n shop NAME` with the plugin on
// PATH and returns its output.
func (d *realDemo) explain(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.env.C.Kubectl(), "ebbflow", "explain", "-n", realNS, name, "--kubeconfig", d.env.C.AdminKubeconfig())
	cmd.Env = append(os.Environ(), "PATH="+d.pluginIn+string(filepath.ListSeparator)+os.Getenv("PATH"))
	b, err := cmd.CombinedOutput()
	if err != nil {
		return string(b), fmt.Errorf("kubectl ebbflow explain %s: %w: %s", name, err, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// dryRunEvents returns the DryRunRescale events of the dry-run Autoscaler.
func (d *realDemo) dryRunEvents(ctx context.Context) (string, error) {
	return d.env.Kubectl(ctx, "", "get", "events", "-n", realNS, "--field-selector", "involvedObject.name="+dryRun+",reason=DryRunRescale",
		"-o", "custom-columns=LAST:.lastTimestamp,COUNT:.count,MESSAGE:.message", "--sort-by=.lastTimestamp")
}
