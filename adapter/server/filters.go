package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/ebbflow/ebbflow/adapter/naming"
)

// InstallFilters adds ebbflow's request filters to an API server config: selectors
// of metrics requests are checked before the metrics handlers see them, so a
// malformed or oversized selector is a 400 (custom-metrics-apiserver itself answers
// some of them with 500) and never reaches a provider.
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
		if !strings.HasPrefix(r.URL.Path, "/apis/custom.metrics.k8s.io/") && !strings.HasPrefix(r.URL.Path, "/apis/external.metrics.k8s.io/") {
			next.ServeHTTP(w, r)
			return
		}
		query := r.URL.Query()
		for _, p := range selectorParams {
			for _, v := range query[p] {
				if err := checkSelector(v); err != nil {
					writeBadRequest(w, fmt.Sprintf("invalid %s: %v", p, err))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func checkSelector(s string) error {
	if len(s) > naming.MaxSelectorLength {
		return fmt.Errorf("longer than %d bytes", naming.MaxSelectorLength)
	}
	_, err := labels.Parse(s)
	return err
}

func writeBadRequest(w http.ResponseWriter, msg string) {
	status := apierrors.NewBadRequest(msg).ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(status)
}
