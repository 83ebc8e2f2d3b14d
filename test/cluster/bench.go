package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// What the benchmarks need beyond the tests: restarting
// kube-controller-manager with other flags, its and the autoscaler's
// /metrics, process ids, and an external metrics API of their own.

// ExternalMetricsStubService is the ExternalName Service (in the adapter's
// namespace) that RegisterExternalMetricsAPI points the APIService at; the
// stub's serving certificate must name ExternalMetricsStubService.ebbflow-system.svc.
const ExternalMetricsStubService = "external-metrics-stub"

// ExternalMetricsStubDNSName is the name the aggregator checks on the stub's
// serving certificate.
const ExternalMetricsStubDNSName = ExternalMetricsStubService + "." + adapterNamespace + ".svc"

// ControllerManagerOptions are the flags RestartControllerManager changes.
type ControllerManagerOptions struct {
	// DisableHPAController switches the HPA controller off.
	DisableHPAController bool
	// Args are appended to the command line (e.g.
	// "--concurrent-horizontal-pod-autoscaler-syncs=50").
	Args []string
}

// RestartControllerManager stops kube-controller-manager and starts it again
// with opts, returning once /healthz answers.
func (c *Cluster) RestartControllerManager(ctx context.Context, opts ControllerManagerOptions) error {
	c.mu.Lock()
	p := c.procs[KubeControllerManager]
	delete(c.procs, KubeControllerManager)
	c.kcm = ControllerManagerOptions{DisableHPAController: opts.DisableHPAController, Args: slices.Clone(opts.Args)}
	c.mu.Unlock()
	if p != nil {
		p.Stop(stopGrace)
	}
	return c.startControllerManager(ctx)
}

// Pid returns the process id of a running component.
func (c *Cluster) Pid(component string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[component]
	if p == nil || p.Exited() {
		return 0, fmt.Errorf("%s is not running", component)
	}
	return p.Pid(), nil
}

// ControllerManagerMetrics returns kube-controller-manager's /metrics.
func (c *Cluster) ControllerManagerMetrics(ctx context.Context) (string, error) {
	hc, err := httpsClient(nil, nil)
	if err != nil {
		return "", err
	}
	return getText(ctx, hc, fmt.Sprintf("https://127.0.0.1:%d/metrics", c.ports.controllerMgr))
}

// AutoscalerMetrics returns ebbflow-autoscaler's /metrics.
func (c *Cluster) AutoscalerMetrics(ctx context.Context) (string, error) {
	c.autoscalerMu.Lock()
	port := c.autoscalerPort
	c.autoscalerMu.Unlock()
	if port == 0 {
		return "", errors.New("ebbflow-autoscaler was never started")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return getText(ctx, hc, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
}

func getText(ctx context.Context, hc *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}

// RegisterExternalMetricsAPI registers v1beta1.external.metrics.k8s.io with
// a server on the loopback port (e.g. test/metricsstub) whose certificate
// caPEM signed, and waits until the APIService is Available. The cluster's
// rule file must have no externalRules (the adapter would own the API).
func (c *Cluster) RegisterExternalMetricsAPI(ctx context.Context, port int, caPEM []byte) error {
	for _, a := range c.apis {
		if a.group == "external.metrics.k8s.io" {
			return errors.New("register external metrics API: the adapter serves it (the rule file has externalRules)")
		}
	}
	_, err := c.client.CoreV1().Services(adapterNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ExternalMetricsStubService},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create stub service: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	const name = "v1beta1.external.metrics.k8s.io"
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": "external.metrics.k8s.io", "version": "v1beta1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			"service":  map[string]any{"namespace": adapterNamespace, "name": ExternalMetricsStubService, "port": int64(port)},
		},
	}}
	client := dyn.Resource(apiServiceGVR())
	_ = client.Delete(ctx, name, metav1.DeleteOptions{})
	if _, err := client.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create APIService %s: %w", name, err)
	}
	return c.WaitAPIServicesAvailable(ctx, apiServiceTimeout, name)
}
