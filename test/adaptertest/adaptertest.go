// Package adaptertest serves ebbflow-adapter's providers through the real
// API server handlers — custom-metrics-apiserver's for custom.metrics.k8s.io
// and external.metrics.k8s.io, resourcemetrics' storage for metrics.k8s.io —
// without a kube-apiserver: authentication and authorization are left out,
// object names come from caches the test fills. The integration tests against
// one Prometheus (test/integration) and against the metric stores
// (test/storetest) share it.
package adaptertest

import (
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	cmapiserver "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"

	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/resourcemetrics"
	"github.com/ebbflow/ebbflow/adapter/server"
)

// MetricsHandler serves prov's custom and external metrics through the
// adapter's request filter and custom-metrics-apiserver's real handlers, as
// the server builds them (server.NewMetricsServer).
func MetricsHandler(t testing.TB, prov *provider.Provider) http.Handler {
	t.Helper()
	cfg := genericapiserver.NewRecommendedConfig(cmapiserver.Codecs)
	cfg.LoopbackClientConfig = &rest.Config{}
	cfg.ExternalAddress = "127.0.0.1:443"
	srv, err := server.NewMetricsServer(&cfg.Config, nil, "ebbflow-adapter-test", prov, prov, prov)
	if err != nil {
		t.Fatal(err)
	}
	return srv.GenericAPIServer.Handler
}

// ResourceHandler serves metrics.k8s.io (v1 and v1beta1) through the
// adapter's storage (resourcemetrics) over prov, with the pods
// (PartialObjectMetadata) and nodes of the given indexers. Each request's
// reads are bounded by a 10 s timeout.
func ResourceHandler(t testing.TB, prov *provider.ResourceProvider, pods, nodes cache.Indexer) http.Handler {
	t.Helper()
	scheme := resourcemetrics.NewScheme()
	cfg := genericapiserver.NewRecommendedConfig(serializer.NewCodecFactory(scheme))
	cfg.LoopbackClientConfig = &rest.Config{}
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(resourcemetrics.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(resourcemetrics.GetOpenAPIDefinitions, namer)
	srv, err := cfg.Complete().New("ebbflow-adapter-test", genericapiserver.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	err = resourcemetrics.Install(srv, resourcemetrics.Options{
		Getter:  prov,
		Pods:    cache.NewGenericLister(pods, metricsv1beta1.Resource("pods")),
		Nodes:   corev1listers.NewNodeLister(nodes),
		Timeout: 10 * time.Second,
		Logger:  klog.Background(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return srv.Handler
}
