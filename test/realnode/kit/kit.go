// Package kit installs Ebbflow as its users do on the local cluster's real
// node, for the real-node tests (test/realnode) and the demo (hack/demo):
// it starts the cluster with the real node, builds the product and
// sample-app images with hack/image and imports them into the node's
// containerd, creates namespaces that enforce the restricted Pod Security
// Standard, runs the pinned kubectl and helm, writes the chart values a user
// of this cluster would set and the sample app's manifests, and waits for
// the chart's APIServices.
//
// Everything here returns errors; the callers decide whether one is fatal.
// Needs root (the real node).
package kit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/buildtools"
	"github.com/ebbflow/ebbflow/test/cluster"
)

// Names of the release, as the chart and hack/image define them.
const (
	Release        = "ebbflow"
	ChartNS        = "ebbflow-system"
	AdapterDepl    = "ebbflow-adapter"
	AutoscalerDepl = "ebbflow-autoscaler"
	ImageTag       = "0.1.0"
	SampleAppImage = "ghcr.io/ebbflow/ebbflow-sampleapp:" + ImageTag
	// NodeName is the real node's name.
	NodeName = "ebbflow-node"
)

// The chart's APIServices with resourceMetrics on.
const (
	APICustom1  = "v1beta1.custom.metrics.k8s.io"
	APICustom2  = "v1beta2.custom.metrics.k8s.io"
	APIExternal = "v1beta1.external.metrics.k8s.io"
	APIResource = "v1beta1.metrics.k8s.io"
	// APIResourceV1 is metrics.k8s.io's v1, registered beside v1beta1.
	APIResourceV1 = "v1.metrics.k8s.io"
)

// PrometheusRetention is the retention of the cluster's Prometheus: a
// forecast's history backfilled into it spans a week and more, and with
// the default one day Prometheus deletes, whenever it loads its blocks (at
// start, after a compaction), every block that ends a day or more before
// its newest — and promtool cuts blocks at multiples of their duration
// (20¼ days for the cluster's backfill), so a week can fall into two.
const PrometheusRetention = 30 * 24 * time.Hour

// AllAPIServices are the five APIServices of the chart with resource
// metrics on.
var AllAPIServices = []string{APICustom1, APICustom2, APIExternal, APIResource, APIResourceV1}

// Env is a started cluster with the real node, the images imported, and
// the tools to install the chart.
type Env struct {
	C       *cluster.Cluster
	Root    string // repository root
	HelmBin string // the pinned helm binary
}

// DefaultScrapeInterval is the cluster Prometheus' scrape interval unless
// Options say otherwise.
const DefaultScrapeInterval = 2 * time.Second

// Options tune Start.
type Options struct {
	// ScrapeInterval of the cluster's Prometheus (DefaultScrapeInterval
	// when zero).
	ScrapeInterval time.Duration
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Dir is the cluster directory, kept afterwards; empty means a temporary
	// one, removed by Stop.
	Dir string
	// DisableHPAController starts kube-controller-manager without its HPA
	// controller (for the autoscaler's drop-in mode).
	DisableHPAController bool
	// HPASyncPeriod is kube-controller-manager's HPA sync period (default:
	// the cluster's, 5s).
	HPASyncPeriod time.Duration
	// ClusterDNS gives pods the cluster's Service names (cluster.Options.ClusterDNS).
	ClusterDNS bool
	// ExtraRealNodes adds real nodes beside the first (cluster.Options.ExtraRealNodes).
	ExtraRealNodes int
}

// Start builds (or finds) helm, starts the cluster with one real node (and
// Options.ExtraRealNodes more) and no host-process adapter, and imports the
// images of ebbflow-adapter, ebbflow-autoscaler and ebbflow-sampleapp into
// the nodes' containerd. On
// error nothing it started is left running.
func Start(ctx context.Context, opts Options) (*Env, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.ScrapeInterval == 0 {
		opts.ScrapeInterval = DefaultScrapeInterval
	}
	root, err := buildtools.RepoRoot()
	if err != nil {
		return nil, err
	}
	helm, err := buildtools.Path(ctx, log, "helm")
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		RealNode:            true,
		NoAdapter:           true,
		NoFakeNodes:         true,
		ScrapeInterval:      opts.ScrapeInterval,
		PrometheusRetention: PrometheusRetention,
		Log:                 log,
		Dir:                 opts.Dir,

		DisableHPAController: opts.DisableHPAController,
		HPASyncPeriod:        opts.HPASyncPeriod,
		ClusterDNS:           opts.ClusterDNS,
		ExtraRealNodes:       opts.ExtraRealNodes,
	})
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	e := &Env{C: c, Root: root, HelmBin: helm}
	if err := e.importImages(ctx, log); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return e, nil
}

// Stop stops the cluster and everything it started.
func (e *Env) Stop() error { return e.C.Stop() }

// importImages builds the product and sample-app images (linux/amd64) and
// imports them into the real node's containerd, as `ctr images import` does
// for a user without a registry.
func (e *Env) importImages(ctx context.Context, log io.Writer) error {
	dir := filepath.Join(e.Root, "_output", "realnode", "images")
	t0 := time.Now()
	tars, err := cluster.BuildImages(ctx, dir, "ebbflow-adapter", "ebbflow-autoscaler", "ebbflow-sampleapp")
	if err != nil {
		return err
	}
	for _, tar := range tars {
		if _, err := e.C.ImportImage(ctx, tar); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "realnode: images built and imported in %v\n", time.Since(t0).Round(time.Second))
	return nil
}

// RestrictedNamespace creates a namespace whose pods kube-apiserver's Pod
// Security admission holds to the restricted standard; one that exists is
// left as it is.
func (e *Env) RestrictedNamespace(ctx context.Context, name string) error {
	_, err := e.C.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// Kubectl runs the pinned kubectl as cluster admin with stdin (if not
// empty) and returns its stdout; the error carries its stderr.
func (e *Env) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.C.Kubectl(), append([]string{"--kubeconfig", e.C.AdminKubeconfig()}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Helm runs the pinned helm in the repository root as cluster admin, with
// its cache, config and data in a temporary directory removed afterwards,
// and returns its combined output.
func (e *Env) Helm(ctx context.Context, args ...string) (string, error) {
	home, err := os.MkdirTemp("", "ebbflow-helm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.CommandContext(ctx, e.HelmBin, append(args, "--kubeconfig", e.C.AdminKubeconfig())...)
	cmd.Dir = e.Root
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// InstallChart writes values to a temporary file and runs `helm install
// --wait` of charts/ebbflow as Release into ChartNS; it returns helm's
// output.
func (e *Env) InstallChart(ctx context.Context, values string, timeout time.Duration) (string, error) {
	f, err := os.CreateTemp("", "ebbflow-values-*.yaml")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(values); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	out, err := e.Helm(ctx, "install", Release, "charts/ebbflow", "--namespace", ChartNS, "--values", f.Name(),
		"--wait", "--timeout", timeout.String())
	if err == nil && !strings.Contains(out, "STATUS: deployed") {
		err = fmt.Errorf("helm install: no STATUS: deployed in\n%s", out)
	}
	return out, err
}

// GetRaw GETs an API path through kube-apiserver as cluster admin and
// decodes the JSON answer into out.
func (e *Env) GetRaw(ctx context.Context, path string, out any) error {
	body, err := e.C.Client().CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: decode: %w", path, err)
	}
	return nil
}

// WaitAPIServicesAvailable waits until each named APIService is Available
// and its group version's discovery answers through kube-apiserver
// (cluster's WaitAPIServicesAvailable), and returns how long that took.
func (e *Env) WaitAPIServicesAvailable(ctx context.Context, timeout time.Duration, names ...string) (time.Duration, error) {
	t0 := time.Now()
	err := e.C.WaitAPIServicesAvailable(ctx, timeout, names...)
	return time.Since(t0), err
}

// ServiceIP returns the ClusterIP of a Service.
func (e *Env) ServiceIP(ctx context.Context, ns, name string) (string, error) {
	s, err := e.C.Client().CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	return s.Spec.ClusterIP, nil
}
