package cluster

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"
)

// MetricsClients returns the custom (preferred version) and external metrics
// clients of k8s.io/metrics, as an HPA uses them, going through kube-apiserver
// as the admin user.
func (c *Cluster) MetricsClients() (custom_metrics.CustomMetricsClient, external_metrics.ExternalMetricsClient, error) {
	cfg := c.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	ext, err := external_metrics.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("external metrics client: %w", err)
	}
	return custom_metrics.NewForConfig(cfg, mapper, custom_metrics.NewAvailableAPIsGetter(dc)), ext, nil
}
