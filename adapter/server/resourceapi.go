package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	generatedcore "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/core"
	generatedcustommetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/custommetrics"
	generatedexternalmetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/externalmetrics"
	msapi "sigs.k8s.io/metrics-server/pkg/api"
	generatedresourcemetrics "sigs.k8s.io/metrics-server/pkg/api/generated/openapi"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/objects"
	"github.com/ebbflow/ebbflow/adapter/provider"
)

// resourceAPI serves metrics.k8s.io (PodMetrics, NodeMetrics) through metrics-server's
// REST storage, over the pod metadata cache the custom metrics API uses and a node
// cache holding node metadata only.
type resourceAPI struct {
	provider  *provider.ResourceProvider
	pods      cache.GenericLister
	nodes     informers.SharedInformerFactory
	podsReady cache.InformerSynced
}

// newResourceAPI builds the provider and the caches; nothing runs until install.
func newResourceAPI(lister *objects.CacheLister, prov *provider.ResourceProvider, restConfig *rest.Config) (*resourceAPI, error) {
	pods, synced, err := lister.GenericLister(schema.GroupResource{Resource: "pods"})
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	nodes := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripNode))
	return &resourceAPI{provider: prov, pods: pods, nodes: nodes, podsReady: synced}, nil
}

// install registers metrics.k8s.io on srv and a readiness check for the caches;
// the node cache starts with start. Requests run under ctx with at most timeout.
func (r *resourceAPI) install(ctx context.Context, srv *genericapiserver.GenericAPIServer, timeout time.Duration) error {
	nodeInformer := r.nodes.Core().V1().Nodes()
	nodeLister := nodeInformer.Lister() // registers the informer before start
	if err := msapi.Install(r.provider.Getter(ctx, timeout), r.pods, nodeLister, srv, nil); err != nil {
		return fmt.Errorf("install metrics.k8s.io: %w", err)
	}
	nodesReady := nodeInformer.Informer().HasSynced
	return srv.AddReadyzChecks(healthz.NamedCheck("resource-metrics-caches", func(_ *http.Request) error {
		if !r.podsReady() || !nodesReady() {
			return errors.New("pod and node caches not filled yet")
		}
		return nil
	}))
}

// start runs the node cache until ctx is done.
func (r *resourceAPI) start(ctx context.Context) {
	r.nodes.Start(ctx.Done())
}

// stripNode keeps what metrics-server's node storage reads: name and labels (for
// label and field selectors).
func stripNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, Labels: n.Labels, UID: n.UID, ResourceVersion: n.ResourceVersion,
	}}, nil
}

// setOpenAPI gives generic OpenAPI definitions for every group apis serves
// (custom-metrics-apiserver's defaults know only the custom and external
// types), titled name.
func setOpenAPI(generic *genericapiserver.Config, name string, apis apigroups.Served) {
	getters := []openapicommon.GetOpenAPIDefinitions{generatedcore.GetOpenAPIDefinitions}
	if apis.Custom {
		getters = append(getters, generatedcustommetrics.GetOpenAPIDefinitions)
	}
	if apis.External {
		getters = append(getters, generatedexternalmetrics.GetOpenAPIDefinitions)
	}
	if apis.Resource {
		getters = append(getters, generatedresourcemetrics.GetOpenAPIDefinitions)
	}
	defs := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		out := map[string]openapicommon.OpenAPIDefinition{}
		for _, g := range getters {
			for k, v := range g(ref) {
				out[k] = v
			}
		}
		return out
	}
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme, msapi.Scheme)
	v2 := genericapiserver.DefaultOpenAPIConfig(defs, namer)
	v2.Info.Title, v2.Info.Version = name, "1.0.0"
	v3 := genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	v3.Info.Title, v3.Info.Version = name, "1.0.0"
	generic.OpenAPIConfig, generic.OpenAPIV3Config = v2, v3
}
