package server

import (
	"context"
	"errors"
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
	"k8s.io/klog/v2"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	generatedcore "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/core"
	generatedcustommetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/custommetrics"
	generatedexternalmetrics "sigs.k8s.io/custom-metrics-apiserver/pkg/generated/openapi/externalmetrics"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
	"github.com/ebbflow/ebbflow/adapter/objects"
	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/resourcemetrics"
)

// resourceAPI serves metrics.k8s.io (PodMetrics, NodeMetrics) at v1 and v1beta1
// through resourcemetrics' REST storage, over the pod metadata cache the custom
// metrics API uses and a node cache holding node metadata only.
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
// the node cache starts with start. Each request's reads of the provider take at
// most timeout and log with ctx's logger.
func (r *resourceAPI) install(ctx context.Context, srv *genericapiserver.GenericAPIServer, timeout time.Duration) error {
	nodeInformer := r.nodes.Core().V1().Nodes()
	nodeLister := nodeInformer.Lister() // registers the informer before start
	err := resourcemetrics.Install(srv, resourcemetrics.Options{
		Getter: r.provider, Pods: r.pods, Nodes: nodeLister, Timeout: timeout, Logger: klog.FromContext(ctx),
	})
	if err != nil {
		return err
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

// stripNode keeps what the node storage reads: name and labels (for
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
		getters = append(getters, resourcemetrics.GetOpenAPIDefinitions)
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
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme, resourcemetrics.NewScheme())
	v2 := genericapiserver.DefaultOpenAPIConfig(defs, namer)
	v2.Info.Title, v2.Info.Version = name, "1.0.0"
	v3 := genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	v3.Info.Title, v3.Info.Version = name, "1.0.0"
	generic.OpenAPIConfig, generic.OpenAPIV3Config = v2, v3
}
