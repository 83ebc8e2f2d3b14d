package storetest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// tenantTransport adds the store's headers to every request.
type tenantTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func (t tenantTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.next.RoundTrip(req)
}

// API is a Prometheus API client of the store's query endpoint, carrying
// its headers (Mimir's tenant): what a test compares the adapter with.
func (s *Store) API() v1.API {
	c, err := api.NewClient(api.Config{
		Address:      s.QueryURL(),
		RoundTripper: tenantTransport{headers: s.Headers(), next: loopback.Transport},
	})
	if err != nil {
		panic(err) // only for an unparsable address, which QueryURL never is
	}
	return v1.NewAPI(c)
}

// WaitForVector evaluates query against the store every 500 ms until cond
// holds for its answer, and returns that answer; an error once ctx ends.
func (s *Store) WaitForVector(ctx context.Context, query string, cond func(model.Vector) bool) (model.Vector, error) {
	var last error
	for {
		v, _, err := s.API().Query(ctx, query, time.Now())
		if vec, ok := v.(model.Vector); err == nil && ok && cond(vec) {
			return vec, nil
		} else if err != nil {
			last = err
		} else {
			last = fmt.Errorf("answer %v", v)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %s never held: %w (last: %v)", s.kind, query, ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
