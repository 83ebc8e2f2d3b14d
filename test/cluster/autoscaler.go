package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/ebbflow/ebbflow/test/certs"
	"github.com/ebbflow/ebbflow/test/proc"
)

// Autoscaler is the component name of ebbflow-autoscaler for LogTail.
const Autoscaler = "ebbflow-autoscaler"

// autoscalerUser is the identity ebbflow-autoscaler runs as: a client
// certificate user bound to the ClusterRoles (and the leader-election Role)
// of manifests/autoscaler, in place of the ServiceAccount those manifests
// name. So the end-to-end runs prove the shipped RBAC is enough.
const autoscalerUser = "ebbflow-autoscaler"

// Autoscaler bounds.
const (
	crdEstablishedTimeout  = 30 * time.Second
	autoscalerReadyTimeout = 30 * time.Second
)

// AutoscalerOptions configure ebbflow-autoscaler started by StartAutoscaler.
// Its sync period is always kube-controller-manager's (Options.HPASyncPeriod),
// leader election is off and /healthz listens on a free loopback port.
type AutoscalerOptions struct {
	// HPAMode is --hpa-mode: "off" (default) or "all" (drop-in: reconcile
	// plain HorizontalPodAutoscalers; start the cluster with
	// DisableHPAController).
	HPAMode string
	// NoAutoscalers sets --autoscalers=false (only plain HPAs, with HPAMode
	// "all").
	NoAutoscalers bool
	// Args are appended to the command line (e.g. "--metrics-dedup-window=0",
	// "--v=4").
	Args []string
}

func (o AutoscalerOptions) withDefaults() AutoscalerOptions {
	if o.HPAMode == "" {
		o.HPAMode = "off"
	}
	return o
}

// autoscalerBinPath is where ebbflow-autoscaler is built.
func (c *Cluster) autoscalerBinPath() string {
	return filepath.Join(c.tools.repoRoot, "_output", "cluster", Autoscaler)
}

// buildAutoscaler compiles cmd/ebbflow-autoscaler like buildAdapter.
func (c *Cluster) buildAutoscaler(ctx context.Context) error {
	bin := c.autoscalerBinPath()
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return fmt.Errorf("create autoscaler output directory: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ebbflow-autoscaler")
	cmd.Dir = c.tools.repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/ebbflow-autoscaler: %w\n%s", err, out)
	}
	return nil
}

// StartAutoscaler builds cmd/ebbflow-autoscaler, installs the Autoscaler CRD
// from manifests/autoscaler/crd (waiting until it is Established), creates
// the autoscaler's RBAC from manifests/autoscaler for the user
// ebbflow-autoscaler, and starts the controller with
// --horizontal-pod-autoscaler-sync-period equal to kube-controller-manager's,
// --leader-elect=false, --hpa-mode=opts.HPAMode and a loopback
// --health-addr; it returns once /healthz answers. Its log is
// LogTail("ebbflow-autoscaler"). A running autoscaler started with the same
// options is left alone; one started with other options is an error (call
// StopAutoscaler first). Stop (or StopAutoscaler) ends it.
func (c *Cluster) StartAutoscaler(ctx context.Context, opts AutoscalerOptions) error {
	opts = opts.withDefaults()
	c.autoscalerMu.Lock()
	defer c.autoscalerMu.Unlock()
	c.mu.Lock()
	p := c.procs[Autoscaler]
	c.mu.Unlock()
	if p != nil && !p.Exited() {
		if !slices.Equal(c.autoscalerArgs, c.autoscalerCommand(opts, c.autoscalerPort)) {
			return fmt.Errorf("start %s: already running with %q", Autoscaler, c.autoscalerArgs)
		}
		return nil
	}
	if err := c.step("ebbflow-autoscaler build, CRD and RBAC", func() error {
		errs := make(chan error, 2)
		go func() { errs <- c.buildAutoscaler(ctx) }()
		go func() { errs <- c.installAutoscalerObjects(ctx) }()
		return errors.Join(<-errs, <-errs)
	}); err != nil {
		return err
	}
	if c.autoscalerPort == 0 {
		ps, err := proc.FreePorts(1)
		if err != nil {
			return err
		}
		c.autoscalerPort = ps[0]
	}
	args := c.autoscalerCommand(opts, c.autoscalerPort)
	p, err := c.launch(Autoscaler, c.autoscalerBinPath(), args)
	if err != nil {
		return err
	}
	c.autoscalerArgs = args
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	return waitFor(ctx, "ebbflow-autoscaler /healthz", autoscalerReadyTimeout, p, func(ctx context.Context) (bool, error) {
		return probe(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.autoscalerPort))
	})
}

// autoscalerCommand is ebbflow-autoscaler's command line.
func (c *Cluster) autoscalerCommand(opts AutoscalerOptions, port int) []string {
	args := []string{
		"--kubeconfig=" + c.autoscalerKubeconfig(),
		"--horizontal-pod-autoscaler-sync-period=" + c.opts.HPASyncPeriod.String(),
		"--leader-elect=false",
		"--hpa-mode=" + opts.HPAMode,
		"--autoscalers=" + strconv.FormatBool(!opts.NoAutoscalers),
		"--health-addr=127.0.0.1:" + strconv.Itoa(port),
	}
	return append(args, opts.Args...)
}

// StopAutoscaler stops ebbflow-autoscaler (SIGTERM, SIGKILL after a grace
// period) and returns once it has exited. The CRD and the Autoscalers stay.
func (c *Cluster) StopAutoscaler() { c.stopComponent(Autoscaler) }

// autoscalerKubeconfig is the kubeconfig of the autoscaler's identity.
func (c *Cluster) autoscalerKubeconfig() string {
	return filepath.Join(c.dir, "kubeconfigs", "user-"+autoscalerUser+".kubeconfig")
}

// installAutoscalerObjects writes the autoscaler's kubeconfig, applies the
// CRD and waits until it is Established, and applies the RBAC rendered from
// manifests/autoscaler with its ServiceAccount subjects replaced by the user
// ebbflow-autoscaler.
func (c *Cluster) installAutoscalerObjects(ctx context.Context) error {
	if _, err := os.Stat(c.autoscalerKubeconfig()); err != nil {
		pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: autoscalerUser})
		if err != nil {
			return err
		}
		if _, err := c.writeKubeconfig("user-"+autoscalerUser, pair); err != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	kinds := map[string]bool{"CustomResourceDefinition": true}
	for k := range rbacKinds {
		kinds[k] = true
	}
	// The CRD and RBAC as manifests/autoscaler renders them: the autoscaler runs with
	// exactly the permissions users install.
	objs, err := c.renderShipped(ctx, "autoscaler", kinds)
	if err != nil {
		return err
	}
	var crdNames []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Kind == "CustomResourceDefinition" {
			crdNames = append(crdNames, o.GetName())
		}
		if err := rebindSubjects(o, "ebbflow-autoscaler", autoscalerUser); err != nil {
			return err
		}
		if err := apply(ctx, dyn, o); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, name := range crdNames {
		if err := waitFor(ctx, "CRD "+name+" Established", crdEstablishedTimeout, nil, func(ctx context.Context) (bool, error) {
			o, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			for _, cd := range conds {
				m, _ := cd.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// apply creates obj or replaces the existing object's content with it.
func apply(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	resources := map[string]string{
		"CustomResourceDefinition": "customresourcedefinitions",
		"ClusterRole":              "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Role": "roles", "RoleBinding": "rolebindings",
	}
	res, ok := resources[gvk.Kind]
	if !ok {
		return fmt.Errorf("kind %s not supported", gvk.Kind)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(gvk.GroupVersion().WithResource(res))
	if ns := obj.GetNamespace(); ns != "" {
		ri = dyn.Resource(gvk.GroupVersion().WithResource(res)).Namespace(ns)
	}
	_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
