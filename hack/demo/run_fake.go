package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	easclient "github.com/ebbflow/ebbflow/autoscaler/generated/clientset/versioned"
	"github.com/ebbflow/ebbflow/test/cluster"
	"github.com/ebbflow/ebbflow/test/exporter"
	"github.com/ebbflow/ebbflow/test/fakeapp"
	"github.com/ebbflow/ebbflow/test/promtest"
)

// readyTimeout bounds the wait for the example pods after they are created.
const readyTimeout = 90 * time.Second

// runFake is the whole fake-node demo (--fake-nodes). Everything it starts
// is stopped before it returns, on success, failure and cancellation
// (Ctrl-C) alike.
func runFake(ctx context.Context, o options, out io.Writer) (err error) {
	began := time.Now()
	defer func() { fmt.Fprintf(out, "demo: wall time %v\n", time.Since(began).Round(time.Second)) }()
	if err := ensurePrometheus(ctx, out); err != nil {
		return err
	}
	rules, err := os.ReadFile(o.rules)
	if err != nil {
		return fmt.Errorf("read rules: %w", err)
	}
	objs, err := loadManifests(o.manifests)
	if err != nil {
		return fmt.Errorf("load %s: %w", o.manifests, err)
	}

	exp := exporter.New()
	if err := exp.Listen(""); err != nil {
		return fmt.Errorf("fakeapp exporter: %w", err)
	}
	defer exp.Close()
	c, err := cluster.Start(ctx, cluster.Options{
		RulesYAML:         rules,
		PrometheusTargets: []promtest.Target{{Addr: exp.Addr(), Job: "simulator"}},
		Log:               out,
		Dir:               o.workDir,
	})
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "demo: tearing down the cluster…")
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stop cluster: %w", stopErr))
		}
	}()

	cs, err := startAutoscaler(ctx, c, out)
	if err != nil {
		return err
	}
	pinNodes(objs, c.NodeNames())
	if err := create(ctx, cs, objs); err != nil {
		return err
	}
	fmt.Fprintf(out, "demo: applied %d objects from %s into namespace %s\n", len(objs), o.manifests, namespace)
	if err := waitDeploymentsReady(ctx, c.Client()); err != nil {
		return err
	}

	services, queues := scenario(o)
	sim, err := fakeapp.New(fakeapp.Config{Client: c.Client(), Sink: exp, Services: services, Queues: queues})
	if err != nil {
		return err
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Run(simCtx) }()
	samples, playErr := play(ctx, o, cs, sim, out)
	stopSim()
	simErr := <-simDone

	if len(samples) > 1 {
		path := filepath.Join(o.output, "demo.png")
		if err := writePlot(path, samples, fakePanels()); err != nil {
			return errors.Join(playErr, simErr, err)
		}
		abs, _ := filepath.Abs(path)
		fmt.Fprintf(out, "demo: plot of load and replicas written to %s\n", abs)
	}
	if err := errors.Join(playErr, simErr); err != nil {
		return err
	}
	outs, verdictErr := verdict(samples, workloads, required)
	for _, oc := range outs {
		fmt.Fprintf(out, "demo: %v\n", oc)
	}
	printComparison(out, samples, "web", webEbbflow)
	if verdictErr != nil {
		return verdictErr
	}
	fmt.Fprintln(out, "demo: PASS: web (HPA), web-ebbflow (ebbflow Autoscaler) and worker scaled up with the load and back down after it")
	return nil
}

// startAutoscaler starts ebbflow-autoscaler in the cluster (Autoscaler kind
// on, hpa-mode off: kube-controller-manager keeps the plain HPAs) after
// installing its CRD and RBAC, and returns the demo's clients.
func startAutoscaler(ctx context.Context, c *cluster.Cluster, out io.Writer) (clients, error) {
	began := time.Now()
	if err := c.StartAutoscaler(ctx, cluster.AutoscalerOptions{}); err != nil {
		return clients{}, fmt.Errorf("start ebbflow-autoscaler: %w", err)
	}
	fmt.Fprintf(out, "demo: ebbflow-autoscaler running (Autoscaler CRD and RBAC installed) in %v\n", time.Since(began).Round(time.Second))
	eas, err := easclient.NewForConfig(c.RESTConfig())
	if err != nil {
		return clients{}, fmt.Errorf("autoscaler clientset: %w", err)
	}
	return clients{kube: c.Client(), eas: eas}, nil
}

// play samples the demo until the profile has played and the required
// workloads have scaled back down (or --settle has passed), printing a table
// row every --print-every. It returns the samples, and ctx's error if it
// was cancelled.
func play(ctx context.Context, o options, c clients, sim *fakeapp.App, out io.Writer) ([]sample, error) {
	fmt.Fprintf(out, "demo: playing %v of traffic (ramp up, plateau, ramp down), then up to %v for scale-down\n", o.duration, o.settle)
	ticker := time.NewTicker(o.sampleEvery)
	defer ticker.Stop()
	var (
		samples   []sample
		lastPrint time.Time
		rows      int
	)
	for {
		select {
		case <-ctx.Done():
			return samples, fmt.Errorf("interrupted: %w", ctx.Err())
		case now := <-ticker.C:
			s := observe(ctx, c, sim.Status())
			samples = append(samples, s)
			if now.Sub(lastPrint) >= o.printEvery-o.sampleEvery/2 {
				if rows%20 == 0 {
					fmt.Fprintln(out, tableHeader)
				}
				printRow(out, s)
				lastPrint, rows = now, rows+1
			}
			if s.T >= o.duration && (settled(samples, required) || s.T >= o.duration+o.settle) {
				if lastPrint != now {
					printRow(out, s)
				}
				return samples, nil
			}
		}
	}
}

// waitDeploymentsReady waits until every example Deployment has a Ready pod.
func waitDeploymentsReady(ctx context.Context, c kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		notReady := ""
		for _, name := range workloads {
			d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Status.ReadyReplicas < 1 {
				notReady = name
				break
			}
		}
		if notReady == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s has no Ready pod: %w", notReady, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ensurePrometheus installs Prometheus with hack/install-prometheus.sh if no
// prometheus binary is found. The cluster itself builds the other tools with
// hack/build-tools.sh (cached after the first run).
func ensurePrometheus(ctx context.Context, out io.Writer) error {
	if _, err := exec.LookPath("prometheus"); err == nil {
		return nil
	}
	if _, err := os.Stat("/usr/bin/prometheus"); err == nil {
		return nil
	}
	fmt.Fprintln(out, "demo: prometheus not found; running hack/install-prometheus.sh")
	cmd := exec.CommandContext(ctx, "hack/install-prometheus.sh")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/install-prometheus.sh: %w", err)
	}
	return nil
}
