package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/metrics/pkg/apis/custom_metrics"
	cmapiserver "sigs.k8s.io/custom-metrics-apiserver/pkg/apiserver"
	cmprovider "sigs.k8s.io/custom-metrics-apiserver/pkg/provider"

	"github.com/ebbflow/ebbflow/adapter/provider"
	"github.com/ebbflow/ebbflow/adapter/rules"
)

// Histories answers the custom-metrics requests carrying the reserved history
// requirements (docs/forecast.md#history-contract); *provider.Provider is one.
// custom-metrics-apiserver answers one object with one value and a list with
// today's objects, and a history is one value per sample, so these requests
// are answered by the request filter.
type Histories interface {
	// ObjectHistory is the history of one object's metric, asked by name.
	ObjectHistory(ctx context.Context, name types.NamespacedName, info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error)
	// PodsHistory is the history of the workload the reserved requirements
	// name, asked for the pods of a namespace (*).
	PodsHistory(ctx context.Context, namespace string, info cmprovider.CustomMetricInfo, metricSelector labels.Selector) (*custom_metrics.MetricValueList, error)
}

var _ Histories = (*provider.Provider)(nil)

// NewMetricsServer builds the aggregated API server of custom.metrics.k8s.io
// and external.metrics.k8s.io (nil providers: that group is served empty) on
// generic, the request filter ahead of custom-metrics-apiserver's handlers,
// after authentication and authorization; the server starts factory (nil:
// none). Complete builds the adapter's with it; tests serve providers through
// it.
func NewMetricsServer(generic *genericapiserver.Config, factory informers.SharedInformerFactory, name string, custom cmprovider.CustomMetricsProvider, external cmprovider.ExternalMetricsProvider, h Histories) (*cmapiserver.CustomMetricsAdapterServer, error) {
	build := generic.BuildHandlerChainFunc
	if build == nil {
		build = genericapiserver.DefaultBuildHandlerChain
	}
	generic.BuildHandlerChainFunc = func(next http.Handler, c *genericapiserver.Config) http.Handler {
		return build(requestFilter{next: next, histories: h}, c)
	}
	return (&cmapiserver.Config{GenericConfig: generic}).Complete(factory).New(name, custom, external)
}

// requestFilter is where every custom or external metrics request enters the
// adapter: its path is split once (parseMetricsPath) and its names checked
// once (checkMetricsPath), its selectors parsed once (parseSelectors), and a
// history request is answered here with those. A malformed or oversized
// selector, namespace or object name is a 400 (custom-metrics-apiserver itself
// answers some of them with 500), a metric name no rule can produce a 404;
// neither reaches a provider. Every other request goes on to next.
type requestFilter struct {
	next http.Handler
	// histories is nil where no history is served: such requests go on.
	histories Histories
}

func (f requestFilter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	mp, ok := parseMetricsPath(r.URL.Path)
	if !ok {
		f.next.ServeHTTP(w, r)
		return
	}
	if !checkMetricsPath(w, mp) {
		return
	}
	sel, err := parseSelectors(r.URL.Query())
	if err != nil {
		writeStatus(w, err)
		return
	}
	if f.histories != nil && r.Method == http.MethodGet && mp.historyRoute() && rules.AsksHistory(sel.metric) {
		f.serveHistory(w, r, mp, sel)
		return
	}
	f.next.ServeHTTP(w, r)
}

// serveHistory answers a history request, encoded by custom-metrics-apiserver's
// serializers in the version asked.
func (f requestFilter) serveHistory(w http.ResponseWriter, r *http.Request, mp metricsPath, sel selectors) {
	gv := schema.GroupVersion{Group: mp.group, Version: mp.version}
	name := types.NamespacedName{Namespace: mp.namespace, Name: mp.name}
	info := cmprovider.CustomMetricInfo{GroupResource: schema.ParseGroupResource(mp.resource), Metric: mp.metric, Namespaced: mp.namespace != ""}
	if mp.resource == "namespaces" && mp.name == mp.namespace { // a namespace's own metric
		name.Namespace, info.Namespaced = "", false
	}
	var list *custom_metrics.MetricValueList
	var err error
	if mp.name == "*" {
		list, err = f.histories.PodsHistory(r.Context(), mp.namespace, info, sel.metric)
	} else {
		list, err = f.histories.ObjectHistory(r.Context(), name, info, sel.metric)
	}
	if err != nil {
		responsewriters.ErrorNegotiated(err, cmapiserver.Codecs, gv, w, r)
		return
	}
	responsewriters.WriteObjectNegotiated(cmapiserver.Codecs, negotiation.DefaultEndpointRestrictions, gv, w, r, http.StatusOK, list, false)
}

// selectors are a metrics request's parsed selectors; absent ones select
// everything.
type selectors struct {
	label, metric labels.Selector
}

// parseSelectors parses the labelSelector and metricLabelSelector of a
// metrics request, each bounded to rules.MaxSelectorLength bytes; a bad one
// is a 400.
func parseSelectors(query url.Values) (selectors, *apierrors.StatusError) {
	s := selectors{label: labels.Everything(), metric: labels.Everything()}
	for _, p := range []struct {
		name string
		into *labels.Selector
	}{{"labelSelector", &s.label}, {"metricLabelSelector", &s.metric}} {
		for i, v := range query[p.name] {
			if len(v) > rules.MaxSelectorLength {
				return s, apierrors.NewBadRequest(fmt.Sprintf("invalid %s: longer than %d bytes", p.name, rules.MaxSelectorLength))
			}
			sel, err := labels.Parse(v)
			if err != nil {
				return s, apierrors.NewBadRequest(fmt.Sprintf("invalid %s: %v", p.name, err))
			}
			if i == 0 {
				*p.into = sel
			}
		}
	}
	return s, nil
}

// writeStatus writes err as a Kubernetes Status object with its HTTP code.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(status)
}
