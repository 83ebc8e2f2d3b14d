// Package realnode tests Ebbflow as its users run it: the images built by
// hack/image imported into the containerd of the local cluster's real node
// (a kubelet, not kwok), the Helm chart installed with helm into namespaces
// that enforce the restricted Pod Security Standard, with the chart's own
// RBAC and nothing of the harness, and the sample application's real pods
// scaled on real HTTP traffic, scraped by Prometheus 3 through
// kubernetes_sd_configs as users' Prometheus finds pods.
//
// One cluster serves the package; TestMain starts it. Needs root (the real
// node); `make test-e2e` installs and builds everything it needs.
package realnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Image names, as hack/image builds them and the chart defaults to.
const (
	imageTag       = "0.1.0"
	sampleAppImage = "ghcr.io/ebbflow/ebbflow-sampleapp:" + imageTag
)

// env is the package's cluster, set by TestMain and only read by tests.
var env struct {
	c    *cluster.Cluster
	root string // repository root
	helm string
}

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.root = root
	if env.helm, err = buildtools.Path(ctx, os.Stderr, "helm"); err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return 1
	}
	c, err := cluster.Start(ctx, cluster.Options{
		RealNode:       true,
		NoAdapter:      true,
		Nodes:          1,
		ScrapeInterval: 2 * time.Second,
		Log:            os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "realnode: start cluster:", err)
		return 1
	}
	env.c = c
	code := 1
	defer func() {
		if code != 0 {
			fmt.Fprintln(os.Stderr, c.DumpLogs(60))
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "realnode: stop cluster:", err)
			code = 1
		}
	}()
	if err := importImages(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "realnode:", err)
		return code
	}
	code = m.Run()
	return code
}

// importImages builds the product and sample-app images (linux/amd64) and
// imports them into the real node's containerd, as `ctr images import` does
// for a user without a registry.
func importImages(ctx context.Context, c *cluster.Cluster) error {
	dir := filepath.Join(env.root, "_output", "realnode", "images")
	t0 := time.Now()
	tars, err := cluster.BuildImages(ctx, dir, "ebbflow-adapter", "ebbflow-autoscaler", "ebbflow-sampleapp")
	if err != nil {
		return err
	}
	for _, tar := range tars {
		if _, err := c.ImportImage(ctx, tar); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "realnode: images built and imported in %v\n", time.Since(t0).Round(time.Second))
	return nil
}
