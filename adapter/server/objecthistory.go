package server

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmapiserver "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/provider"
)

// ObjectHistories answers the history of one object's custom metric
// (provider.Provider.ObjectHistory).
type ObjectHistories interface {
	ObjectHistory(ctx context.Context, name types.NamespacedName, info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error)
}

// InstallObjectHistory routes custom-metrics requests for one object by
// name whose metric selector holds the reserved history requirements
// (docs/forecast.md#history-contract) to h, after authentication,
// authorization and ebbflow's other filters (install it after
// InstallFilters). custom-metrics-apiserver answers one object with one
// value, and a history is one value per sample, so these requests are
// answered here, encoded by the same serializers as the metrics handlers.
// Every other request goes on unchanged.
func InstallObjectHistory(cfg *genericapiserver.Config, h ObjectHistories) {
	build := cfg.BuildHandlerChainFunc
	if build == nil {
		build = genericapiserver.DefaultBuildHandlerChain
	}
	cfg.BuildHandlerChainFunc = func(next http.Handler, c *genericapiserver.Config) http.Handler {
		return build(objectHistory(next, h), c)
	}
}

func objectHistory(next http.Handler, h ObjectHistories) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, info, sel, ok := objectHistoryRequest(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		ri, _ := request.RequestInfoFrom(r.Context())
		gv := schema.GroupVersion{Group: ri.APIGroup, Version: ri.APIVersion}
		list, err := h.ObjectHistory(r.Context(), name, info, sel)
		if err != nil {
			responsewriters.ErrorNegotiated(err, cmapiserver.Codecs, gv, w, r)
			return
		}
		responsewriters.WriteObjectNegotiated(cmapiserver.Codecs, negotiation.DefaultEndpointRestrictions, gv, w, r, http.StatusOK, list, false)
	})
}

// objectHistoryRequest recognises a GET of custom.metrics.k8s.io for one
// object by name (/namespaces/NS/RESOURCE/NAME/METRIC, /RESOURCE/NAME/METRIC
// or a namespace's /namespaces/NS/metrics/METRIC) with a reserved key in its
// metricLabelSelector. Lists (* as the name) are left to the metrics
// handlers, whose provider refuses a history with a 400 saying why.
func objectHistoryRequest(r *http.Request) (types.NamespacedName, cmprovider.CustomMetricInfo, labels.Selector, bool) {
	var none types.NamespacedName
	ri, ok := request.RequestInfoFrom(r.Context())
	if !ok || !ri.IsResourceRequest || ri.Verb != "get" || ri.APIGroup != "custom.metrics.k8s.io" {
		return none, cmprovider.CustomMetricInfo{}, nil, false
	}
	if ri.APIVersion != "v1beta1" && ri.APIVersion != "v1beta2" {
		return none, cmprovider.CustomMetricInfo{}, nil, false
	}
	sel, err := labels.Parse(r.URL.Query().Get("metricLabelSelector"))
	if err != nil || !provider.WantsHistory(sel) {
		return none, cmprovider.CustomMetricInfo{}, nil, false
	}
	namespace, resource, name, metric := ri.Namespace, ri.Resource, ri.Name, ri.Subresource
	if namespace != "" && resource == "metrics" && metric == "" {
		// A namespace's own metric.
		namespace, resource, name, metric = "", "namespaces", ri.Namespace, ri.Name
	}
	if name == "" || name == "*" || metric == "" || len(ri.Parts) > 3 {
		return none, cmprovider.CustomMetricInfo{}, nil, false
	}
	return types.NamespacedName{Namespace: namespace, Name: name},
		cmprovider.CustomMetricInfo{GroupResource: schema.ParseGroupResource(resource), Metric: metric, Namespaced: namespace != ""},
		sel, true
}
