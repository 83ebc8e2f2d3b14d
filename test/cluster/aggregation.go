package cluster

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
	"github.com/ebbflow/ebbflow/test/certs"
)

// apiServiceTimeout bounds the wait for the APIServices to become Available.
const apiServiceTimeout = 90 * time.Second

// apiServiceGVR is apiregistration.k8s.io/v1 apiservices (used through the
// dynamic client: the module does not depend on k8s.io/kube-aggregator).
func apiServiceGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
}

// metricsAPI is one group version the adapter serves.
type metricsAPI struct {
	group, version  string
	versionPriority int64
}

func (a metricsAPI) name() string { return a.version + "." + a.group }

// metricsAPIsFor returns the APIServices to register for a rule file: the
// groups it has rules for. ebbflow-adapter serves custom.metrics.k8s.io and
// external.metrics.k8s.io whatever the rules, and metrics.k8s.io (default
// --resource-metrics=auto) when the file has resourceRules at start; the
// harness registers only the groups the tests' rules use.
func metricsAPIsFor(rules []byte) ([]metricsAPI, error) {
	cfg, err := rulefile.Load(rules)
	if err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	var apis []metricsAPI
	if len(cfg.Rules) > 0 {
		apis = append(apis, metricsAPI{"custom.metrics.k8s.io", "v1beta1", 100}, metricsAPI{"custom.metrics.k8s.io", "v1beta2", 200})
	}
	if len(cfg.ExternalRules) > 0 {
		apis = append(apis, metricsAPI{"external.metrics.k8s.io", "v1beta1", 100})
	}
	// The local cluster has no metrics-server: with resourceRules the adapter
	// serves metrics.k8s.io, which `kubectl top` (v1, preferred by the higher
	// versionPriority) and Resource metrics (kube-controller-manager: v1beta1)
	// read.
	if cfg.ResourceRules != nil {
		apis = append(apis, metricsAPI{"metrics.k8s.io", "v1", 200}, metricsAPI{"metrics.k8s.io", "v1beta1", 100})
	}
	if len(apis) == 0 {
		return nil, errors.New("rule file has neither rules, externalRules nor resourceRules")
	}
	return apis, nil
}

// APIServiceNames returns the names of the APIServices registered for the
// adapter, e.g. "v1beta2.custom.metrics.k8s.io": the custom metrics ones if
// Options.RulesYAML has rules, the external one if it has externalRules.
func (c *Cluster) APIServiceNames() []string {
	var names []string
	for _, a := range c.apis {
		names = append(names, a.name())
	}
	return names
}

// applyAdapterObjects writes the rule file and the adapter's kubeconfig and
// creates its namespace, ExternalName Service and RBAC: the RBAC rendered from
// manifests/adapter (delegated authn/authz, read access to the objects metrics
// describe), bound to the adapter's user.
func (c *Cluster) applyAdapterObjects(ctx context.Context) error {
	if err := c.WriteRules(c.opts.RulesYAML); err != nil {
		return err
	}
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: adapterUser})
	if err != nil {
		return err
	}
	if _, err := c.writeKubeconfig("user-"+adapterUser, pair); err != nil {
		return err
	}
	core := c.client.CoreV1()
	creates := []struct {
		what string
		fn   func() error
	}{
		{"namespace", func() error {
			_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adapterNamespace}}, metav1.CreateOptions{})
			return err
		}},
		{"service", func() error {
			_, err := core.Services(adapterNamespace).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: adapterService},
				// The aggregator dials https://localhost:<APIService port>.
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, cr := range creates {
		if err := cr.fn(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create adapter %s: %w", cr.what, err)
		}
	}
	// The adapter's permissions are those manifests/adapter ships, nothing more.
	return c.applyShippedRBAC(ctx, "adapter", "ebbflow-adapter", adapterUser)
}

// ensureAPIServices creates the adapter's APIServices or updates their spec.
func (c *Cluster) ensureAPIServices(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	client := dyn.Resource(apiServiceGVR())
	for _, a := range c.apis {
		spec := map[string]any{
			"group":                a.group,
			"version":              a.version,
			"groupPriorityMinimum": int64(100),
			"versionPriority":      a.versionPriority,
			"caBundle":             base64.StdEncoding.EncodeToString(c.pki.adapterCA.CertPEM),
			"service": map[string]any{
				"namespace": adapterNamespace,
				"name":      adapterService,
				"port":      int64(c.ports.adapter),
			},
		}
		name := a.name()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1",
			"kind":       "APIService",
			"metadata":   map[string]any{"name": name},
			"spec":       spec,
		}}
		_, err := client.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// The availability controller writes status concurrently: retry
			// conflicts, and leave an APIService whose spec is current alone.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur, err := client.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if equality.Semantic.DeepEqual(cur.Object["spec"], obj.Object["spec"]) {
					return nil
				}
				cur.Object["spec"] = spec
				_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("apply APIService %s: %w", name, err)
		}
	}
	return nil
}

// WaitAPIServicesAvailable waits until each named APIService
// ("v1beta1.metrics.k8s.io"; none named: every APIService of the cluster's
// adapter) reports Available=True and kube-apiserver proxies its group
// version's discovery, or fails after timeout with the last condition or
// error. Both are needed: kube-apiserver's proxy learns of the condition
// through its own informer, so for a moment after Available=True it may
// still answer 503 "service unavailable".
func (c *Cluster) WaitAPIServicesAvailable(ctx context.Context, timeout time.Duration, names ...string) error {
	if len(names) == 0 {
		for _, a := range c.apis {
			names = append(names, a.name())
		}
	}
	dyn, err := dynamic.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	disco := c.Client().Discovery()
	return waitFor(ctx, fmt.Sprintf("APIServices %v Available", names), timeout, nil, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			obj, err := dyn.Resource(apiServiceGVR()).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			status, reason, msg := availableCondition(obj)
			if status != "True" {
				return false, fmt.Errorf("APIService %s Available=%s (%s): %s", name, status, reason, msg)
			}
			version, group, _ := strings.Cut(name, ".")
			if _, err := disco.ServerResourcesForGroupVersion(group + "/" + version); err != nil {
				return false, fmt.Errorf("APIService %s Available but discovery through kube-apiserver failed: %w", name, err)
			}
		}
		return true, nil
	})
}

// availableCondition returns the status, reason and message of an APIService's
// Available condition ("Unknown" if absent).
func availableCondition(obj *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if !ok || cond["type"] != "Available" {
			continue
		}
		s, _ := cond["status"].(string)
		r, _ := cond["reason"].(string)
		m, _ := cond["message"].(string)
		return s, r, m
	}
	return "Unknown", "", "no Available condition yet"
}
