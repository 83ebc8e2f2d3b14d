package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ebbflow/ebbflow/test/certs"
)

// prometheusUser is Prometheus' identity towards kube-apiserver (pod
// discovery) and the kubelet (/metrics/cadvisor, /metrics/resource).
const prometheusUser = "ebbflow-prometheus"

// PodPrometheusHost and PodPrometheusPort are where pods reach the cluster's
// Prometheus (with a real node it listens on the bridge's address), e.g. for
// the chart's prometheus.url and prometheus.port.
func (c *Cluster) PodPrometheusHost() string { return c.APIServerHost() }

// PodPrometheusPort is the port of PodPrometheusHost.
func (c *Cluster) PodPrometheusPort() int {
	_, port, _ := net.SplitHostPort(c.Prometheus().Addr())
	n, _ := strconv.Atoi(port)
	return n
}

// nodeScrapeConfigs are Prometheus' jobs for the real node, as a user's
// Prometheus has them: pods found through kubernetes_sd_configs (role pod)
// that opt in with the prometheus.io/scrape and prometheus.io/port
// annotations, labelled namespace, pod and node; the kubelet's
// /metrics/resource and /metrics/cadvisor over TLS with a client certificate,
// labelled node and metrics_path. Only pod addresses (in the run's network
// namespaces) and the bridge's address are dialled.
func (c *Cluster) nodeScrapeConfigs(certFile, keyFile string) string {
	tls := fmt.Sprintf("{ca_file: %q, cert_file: %q, key_file: %q}", c.pki.caFile, certFile, keyFile)
	job := func(path string) string {
		s := fmt.Sprintf(`- job_name: kubelet%[1]s
  scheme: https
  metrics_path: %[1]s
  tls_config: %[2]s
  static_configs:
`, path, tls)
		for _, n := range c.nodes {
			kubelet := net.JoinHostPort(podGateway, strconv.Itoa(n.kubeletPort))
			s += fmt.Sprintf("  - targets: [%q]\n    labels: {node: %q, metrics_path: %q}\n", kubelet, n.name, path)
		}
		return s
	}
	return fmt.Sprintf(`- job_name: kubernetes-pods
  kubernetes_sd_configs:
  - role: pod
    api_server: %q
    tls_config: %s
  relabel_configs:
  - {source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape], action: keep, regex: "true"}
  - {source_labels: [__meta_kubernetes_pod_ip], action: keep, regex: '10\.244\.0\.\d+'}
  - source_labels: [__meta_kubernetes_pod_ip, __meta_kubernetes_pod_annotation_prometheus_io_port]
    regex: '(.+);(\d+)'
    replacement: '$1:$2'
    target_label: __address__
  - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
  - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
  - {source_labels: [__meta_kubernetes_pod_node_name], target_label: node}
`, c.apiserverURL(), tls) + job("/metrics/resource") + job("/metrics/cadvisor")
}

// prometheusIdentity issues Prometheus' client certificate and grants it what
// a Prometheus in a cluster has: discovery of pods and the kubelet's metrics.
func (c *Cluster) prometheusIdentity(ctx context.Context) (certFile, keyFile string, err error) {
	pair, err := c.pki.clusterCA.Issue(certs.Spec{CommonName: prometheusUser})
	if err != nil {
		return "", "", err
	}
	if certFile, keyFile, err = pair.Write(filepath.Join(c.pki.dir), "prometheus"); err != nil {
		return "", "", err
	}
	rbac := c.client.RbacV1()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "nodes", "services", "endpoints"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: prometheusUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: prometheusUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: prometheusUser}},
	}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", "", fmt.Errorf("prometheus ClusterRole: %w", err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", "", fmt.Errorf("prometheus ClusterRoleBinding: %w", err)
	}
	return certFile, keyFile, nil
}

// startNodePrometheus starts Prometheus 3 for a real node: listening on the
// bridge's address (pods reach it there), with the node's scrape jobs.
func (c *Cluster) startNodePrometheus(ctx context.Context) error {
	certFile, keyFile, err := c.prometheusIdentity(ctx)
	if err != nil {
		return err
	}
	opts := c.prometheusOptions()
	opts.Prometheus3 = true
	opts.ListenHost = podGateway
	opts.ExtraScrapeConfigsYAML = c.nodeScrapeConfigs(certFile, keyFile)
	return c.startPrometheus(ctx, opts)
}
