// Package adaptertest serves ebbflow-adapter's providers through the real
// API server handlers — custom-metrics-apiserver's for custom.metrics.k8s.io
// and external.metrics.k8s.io, metrics-server's storage for metrics.k8s.io —
// without a kube-apiserver: authentication and authorization are left out,
// object names come from caches the test fills. The integration tests against
// one Prometheus (test/integration) and against the metric stores
// (test/storetest) share it.
package adaptertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	cmapiserver "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	msapi "sigs.k8s.io/metrics-server/pkg/api"
	msopenapi "sigs.k8s.io/metrics-server/pkg/api/generated/openapi"

	"github.com/ebbflow/ebbflow/adapter/provider"
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

// ResourceHandler serves metrics.k8s.io through metrics-server's storage
// over prov, with the pods (PartialObjectMetadata) and nodes of the given
// indexers. Reads are bounded by a 10 s timeout; the getter's context ends
// with the test.
func ResourceHandler(t testing.TB, prov *provider.ResourceProvider, pods, nodes cache.Indexer) http.Handler {
	t.Helper()
	cfg := genericapiserver.NewRecommendedConfig(msapi.Codecs)
	cfg.LoopbackClientConfig = &rest.Config{}
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(msapi.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(msopenapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(msopenapi.GetOpenAPIDefinitions, namer)
	srv, err := cfg.Complete().New("ebbflow-adapter-test", genericapiserver.NewEmptyDelegate())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	podLister := cache.NewGenericLister(pods, metricsv1beta1.Resource("pods"))
	if err := msapi.Install(prov.Getter(ctx, 10*time.Second), podLister, corev1listers.NewNodeLister(nodes), srv, nil); err != nil {
		t.Fatal(err)
	}
	return srv.Handler
}
