package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/ebbflow/ebbflow/adapter/rules"
)

// InstallFilters adds ebbflow's request filters to an API server config: paths and
// selectors of metrics requests are checked before the metrics handlers see them, so
// a malformed or oversized selector, namespace or object name is a 400
// (custom-metrics-apiserver itself answers some of them with 500), a metric name no
// rule can produce is a 404, and neither reaches a provider.
func InstallFilters(cfg *genericapiserver.Config) {
	build := cfg.BuildHandlerChainFunc
	if build == nil {
		build = genericapiserver.DefaultBuildHandlerChain
	}
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return build(validateSelectors(h), c)
	}
}

// selectorParams are the query parameters of metrics requests holding selectors.
var selectorParams = []string{"labelSelector", "metricLabelSelector"}

func validateSelectors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mp, ok := parseMetricsPath(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !checkMetricsPath(w, mp) {
			return
		}
		query := r.URL.Query()
		for _, p := range selectorParams {
			for _, v := range query[p] {
				if err := checkSelector(v); err != nil {
					writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("invalid %s: %v", p, err)))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func checkSelector(s string) error {
	if len(s) > rules.MaxSelectorLength {
		return fmt.Errorf("longer than %d bytes", rules.MaxSelectorLength)
	}
	_, err := labels.Parse(s)
	return err
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
