package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ebbflow/ebbflow/adapter/apigroups"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.ConfigFile = "/etc/ebbflow/config.yaml"
		o.PrometheusURL = "http://prometheus:9090"
		return o
	}
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"valid", func(*Options) {}, ""},
		{"config required", func(o *Options) { o.ConfigFile = "" }, "--config is required"},
		{"bad url", func(o *Options) { o.PrometheusURL = "prometheus:9090" }, "--prometheus-url"},
		{"bad verb", func(o *Options) { o.PrometheusVerb = "PUT" }, "--prometheus-verb"},
		{"max age below relist", func(o *Options) { o.MaxAge = time.Second }, "--metrics-max-age"},
		{"bad header", func(o *Options) { o.PrometheusHeaders = []string{"novalue"} }, "--prometheus-header"},
		{"exclusive auth", func(o *Options) { o.Transport.InCluster = true; o.Transport.AuthConfig = "k" }, "mutually exclusive"},
		{"concurrency", func(o *Options) { o.MaxConcurrentQueries = 0 }, "--max-concurrent-queries"},
		{"nan drop", func(o *Options) { o.NaNValues = "drop" }, ""},
		{"bad nan values", func(o *Options) { o.NaNValues = "skip" }, "--nan-values"},
		{"resource metrics enabled", func(o *Options) { o.ResourceMetrics = apigroups.ResourceMetricsEnabled }, ""},
		{"resource metrics disabled", func(o *Options) { o.ResourceMetrics = apigroups.ResourceMetricsDisabled }, ""},
		{"bad resource metrics", func(o *Options) { o.ResourceMetrics = "true" }, "--resource-metrics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.mutate(o)
			errs := o.Validate()
			var all []string
			for _, e := range errs {
				all = append(all, e.Error())
			}
			joined := strings.Join(all, "\n")
			if tt.want == "" && len(errs) > 0 {
				t.Fatalf("unexpected errors: %s", joined)
			}
			if tt.want != "" && !strings.Contains(joined, tt.want) {
				t.Fatalf("errors %q do not mention %q", joined, tt.want)
			}
		})
	}
}

func TestValidateSelectors(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := requestFilter{next: next}
	tests := []struct {
		path, param, value string
		want               int
	}{
		{"/apis/custom.metrics.k8s.io/v1beta2/namespaces/a/pods/*/m", "labelSelector", "app=web", http.StatusTeapot},
		{"/apis/custom.metrics.k8s.io/v1beta2/namespaces/a/pods/*/m", "metricLabelSelector", `a in (x"} or vector(1))`, http.StatusBadRequest},
		{"/apis/external.metrics.k8s.io/v1beta1/namespaces/a/m", "labelSelector", strings.Repeat("a", 5000) + "=b", http.StatusBadRequest},
		{"/healthz", "labelSelector", "((", http.StatusTeapot},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, tt.path+"?"+tt.param+"="+url.QueryEscape(tt.value), nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%s ?%s=%.30q: status %d, want %d (%s)", tt.path, tt.param, tt.value, rec.Code, tt.want, rec.Body)
		}
		if rec.Code == http.StatusBadRequest && !strings.Contains(rec.Body.String(), `"reason":"BadRequest"`) {
			t.Errorf("400 body is not a Status: %s", rec.Body)
		}
	}
}
