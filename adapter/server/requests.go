package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
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

// maxObjectNameLength bounds object names in metrics paths: the longest Kubernetes
// object name (a DNS subdomain).
const maxObjectNameLength = validation.DNS1123SubdomainMaxLength

// metricsPath is what a metrics request path names; empty fields are absent.
type metricsPath struct {
	group     string
	version   string
	namespace string
	// resource is the custom metric's resource ("namespaces" for a
	// namespace's own metric, whose name is then the namespace's).
	resource string
	name     string
	metric   string
}

// parseMetricsPath splits the path of a custom or external metrics request after
// its version: /namespaces/NS/RESOURCE/NAME/METRIC, /namespaces/NS/metrics/METRIC,
// /RESOURCE/NAME/METRIC (custom) and /namespaces/NS/METRIC (external). ok is false
// for paths of neither API.
func parseMetricsPath(p string) (metricsPath, bool) {
	var mp metricsPath
	var rest string
	switch {
	case strings.HasPrefix(p, "/apis/custom.metrics.k8s.io/"):
		mp.group, rest = "custom.metrics.k8s.io", strings.TrimPrefix(p, "/apis/custom.metrics.k8s.io/")
	case strings.HasPrefix(p, "/apis/external.metrics.k8s.io/"):
		mp.group, rest = "external.metrics.k8s.io", strings.TrimPrefix(p, "/apis/external.metrics.k8s.io/")
	default:
		return mp, false
	}
	seg := strings.Split(strings.Trim(rest, "/"), "/")
	mp.version, seg = seg[0], seg[1:]
	if len(seg) >= 2 && seg[0] == "namespaces" {
		mp.namespace, seg = seg[1], seg[2:]
	}
	switch {
	case mp.group == "external.metrics.k8s.io" && len(seg) == 1:
		mp.metric = seg[0]
	case len(seg) == 2 && seg[0] == "metrics":
		mp.metric = seg[1]
		if mp.namespace != "" { // a namespace's own metric
			mp.resource, mp.name = "namespaces", mp.namespace
		}
	case len(seg) == 3:
		mp.resource, mp.name, mp.metric = seg[0], seg[1], seg[2]
	}
	return mp, true
}

// historyRoute reports whether the request filter answers mp when its metric
// selector asks for a history: a custom metric of one object by name, or of
// the pods of a namespace (*). Other lists are left to the metrics handlers,
// whose provider refuses a history with a 400 saying why.
func (mp metricsPath) historyRoute() bool {
	if mp.group != "custom.metrics.k8s.io" || (mp.version != "v1beta1" && mp.version != "v1beta2") || mp.metric == "" || mp.name == "" {
		return false
	}
	return mp.name != "*" || (mp.resource == "pods" && mp.namespace != "")
}

// checkMetricsPath answers requests whose path names cannot exist before the
// metrics handlers see them: a namespace that is not a DNS label or an object name
// that is not a valid name up to 253 bytes is a 400; a metric name no rule can
// produce (longer than 253 bytes, or bytes no metric name holds) is a 404. The
// names are not echoed back in full.
func checkMetricsPath(w http.ResponseWriter, mp metricsPath) bool {
	if mp.namespace != "" {
		if errs := validation.IsDNS1123Label(mp.namespace); len(errs) > 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid namespace %s: %s", shorten(mp.namespace), strings.Join(errs, "; "))))
			return false
		}
	}
	if mp.name != "" && mp.name != "*" {
		errs := content.IsPathSegmentName(mp.name)
		if len(mp.name) > maxObjectNameLength {
			errs = append(errs, fmt.Sprintf("must be no more than %d bytes", maxObjectNameLength))
		}
		if len(errs) > 0 {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid object name %s: %s", shorten(mp.name), strings.Join(errs, "; "))))
			return false
		}
	}
	if mp.metric != "" {
		if err := rules.CheckMetricName(mp.metric); err != nil {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: mp.group, Resource: "metrics"}, shorten(mp.metric)))
			return false
		}
	}
	return true
}

// shorten quotes s, cut to 64 bytes, for messages.
func shorten(s string) string {
	const keep = 64
	if len(s) > keep {
		return fmt.Sprintf("%q...", strings.ToValidUTF8(s[:keep], ""))
	}
	return fmt.Sprintf("%q", s)
}
