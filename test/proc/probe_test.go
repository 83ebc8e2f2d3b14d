package proc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
		case "/slow":
			time.Sleep(probeTimeout + time.Second)
		default:
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]bool{"/ready": true, "/starting": false, "/slow": false} {
		if got := Probe(context.Background(), srv.URL+path); got != want {
			t.Errorf("Probe(%s) = %v, want %v", path, got, want)
		}
	}
	srv.Close()
	if Probe(context.Background(), srv.URL+"/ready") {
		t.Error("Probe of a closed server = true")
	}
}
