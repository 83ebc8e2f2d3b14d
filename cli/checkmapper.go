package cli

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ebbflow/ebbflow/adapter/rulefile"
)

// checkMapper is the RESTMapper `config check` resolves resources with: the
// built-in resources, plus those of the --api-resources file, or the cluster of
// --kubeconfig (its discovery, as ebbflow-adapter's own mapper sees it).
func checkMapper(kubeconfig, apiResources string) (meta.RESTMapper, error) {
	switch {
	case apiResources != "":
		data, err := os.ReadFile(apiResources)
		if err != nil {
			return nil, fmt.Errorf("--api-resources: %w", err)
		}
		lists, err := rulefile.ParseAPIResources(data)
		if err != nil {
			return nil, fmt.Errorf("--api-resources %s: %w", apiResources, err)
		}
		return rulefile.RESTMapperWith(lists), nil
	case kubeconfig != "":
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: %w", err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: discovery client: %w", err)
		}
		groups, err := restmapper.GetAPIGroupResources(dc)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig: discovery: %w", err)
		}
		return restmapper.NewDiscoveryRESTMapper(groups), nil
	}
	return rulefile.DefaultRESTMapper(), nil
}
