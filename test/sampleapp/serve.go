package sampleapp

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// NewServeMux returns the serve mode's handlers: GET / burns cpuPerRequest of
// cpu time and answers 200 "ok"; requests to it are counted in
// http_requests_total{handler="/"}, registered on reg. A request whose
// client goes away stops burning and is answered 503.
func NewServeMux(reg prometheus.Registerer, cpuPerRequest time.Duration) *http.ServeMux {
	requests := newRequestsCounter(reg)
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", instrument(requests, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := BurnCPU(r.Context(), cpuPerRequest); err != nil {
			http.Error(w, "canceled", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})))
	return mux
}
